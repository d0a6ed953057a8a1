package rest

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"sandfs/api"
	"sandfs/rest/agentfs"
)

func TestHealth(t *testing.T) {
	h := newHarness(t, harnessOpts{Token: "tok"})
	for _, p := range []string{"/health", "/v1/health", "/v1/ping"} {
		t.Run(p, func(t *testing.T) {
			r := h.do(t, req{Method: "GET", Target: p, NoAuth: true})
			wantStatus(t, r, 200)
			got := decode[healthResponse](t, r)
			if got.Status != "ok" {
				t.Errorf("status: got %q, want ok", got.Status)
			}
			// The build, as "sandfs version" prints it (a test binary is
			// "(devel)" with no VCS stamp).
			if got.Version != Version() || !strings.HasPrefix(got.Version, "sandfs ") {
				t.Errorf("version: got %q, want %q", got.Version, Version())
			}
		})
	}
}

func TestVersionOf(t *testing.T) {
	vcs := func(kv ...string) []debug.BuildSetting {
		var out []debug.BuildSetting
		for i := 0; i < len(kv); i += 2 {
			out = append(out, debug.BuildSetting{Key: kv[i], Value: kv[i+1]})
		}
		return out
	}
	for _, tc := range []struct {
		bi   debug.BuildInfo
		want string
	}{
		{debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "sandfs (devel)"},
		{debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}, Settings: vcs("vcs.revision", "48187d0c1a2b3c4d5e6f", "vcs.time", "2026-12-01T15:00:00Z", "vcs.modified", "false")},
			"sandfs v1.2.3 48187d0c1a2b 2026-12-01T15:00:00Z"},
		{debug.BuildInfo{Settings: vcs("vcs.revision", "abc", "vcs.modified", "true")}, "sandfs (devel) abc dirty"},
	} {
		if got := versionOf(&tc.bi); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestEntries(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	fixture(t, h)
	type e struct {
		name, path, typ string
		size            uint64
	}
	rootEntries := []e{
		{"a.txt", "/a.txt", "file", 3},
		{"dangling", "/dangling", "file", uint64(len("nowhere"))},
		{"dirlink", "/dirlink", "file", uint64(len("sub"))},
		{"link", "/link", "file", uint64(len("a.txt"))},
		{"sub", "/sub", "directory", 0},
	}
	cases := []struct {
		name   string
		target string
		want   []e
	}{
		{"default path is the workdir", "/v1/fs/entries", rootEntries},
		{"empty path is the workdir", "/v1/fs/entries?path=", rootEntries},
		{"dot", "/v1/fs/entries?path=.", rootEntries},
		{"dotdot stays at the root", "/v1/fs/entries?path=../../..", rootEntries},
		{"relative", "/v1/fs/entries?path=sub", []e{{"inner", "/sub/inner", "file", 6}}},
		{"absolute with session", "/v1/fs/entries?path=/sub&sessionId=s1&session_id=s2", []e{{"inner", "/sub/inner", "file", 6}}},
		{"through a dir symlink", "/v1/fs/entries?path=/dirlink", []e{{"inner", "/dirlink/inner", "file", 6}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, req{Method: "GET", Target: c.target})
			wantStatus(t, r, 200)
			got := decode[[]api.FSEntry](t, r)
			if len(got) != len(c.want) {
				t.Fatalf("entries: got %d (%+v), want %d", len(got), got, len(c.want))
			}
			for i, w := range c.want {
				g := got[i]
				if g.Name != w.name || g.Path != w.path || g.EntryType != w.typ {
					t.Errorf("entry %d: got %s %s %s, want %s %s %s", i, g.Name, g.Path, g.EntryType, w.name, w.path, w.typ)
				}
				if w.typ == "file" && g.Size != w.size {
					t.Errorf("entry %s size: got %d, want %d", g.Name, g.Size, w.size)
				}
				checkModified(t, g.Modified, h.host(w.path))
			}
			if r.Header.Get(agentfs.HeaderTruncated) != "" {
				t.Errorf("%s: got %q, want none", agentfs.HeaderTruncated, r.Header.Get(agentfs.HeaderTruncated))
			}
		})
	}

	fails := []struct {
		name, target string
		status       int
		typ          string
	}{
		{"not found", "/v1/fs/entries?path=/nope", 404, "not_found"},
		{"a file", "/v1/fs/entries?path=/a.txt", 400, "invalid_request"},
		{"NUL byte", "/v1/fs/entries?path=/a%00b", 400, "invalid_request"},
		{"malformed query", "/v1/fs/entries?path=%zz", 400, "invalid_request"},
		{"dangling symlink", "/v1/fs/entries?path=/dangling", 404, "not_found"},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			wantProblem(t, h.do(t, req{Method: "GET", Target: c.target}), c.status, c.typ)
		})
	}
}

// checkModified holds a modified field to the file's lstat mtime, in
// chrono's RFC 3339 form.
func checkModified(t *testing.T, got, hostPath string) {
	t.Helper()
	fi, err := os.Lstat(hostPath)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(got, "+00:00") {
		t.Errorf("modified %q: want a +00:00 offset", got)
	}
	ts, err := time.Parse(time.RFC3339Nano, got)
	if err != nil {
		t.Fatalf("modified %q: %v", got, err)
	}
	if !ts.Equal(fi.ModTime()) {
		t.Errorf("modified: got %v, want %v", ts, fi.ModTime())
	}
}

func TestStat(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	fixture(t, h)
	cases := []struct {
		name, target, path, typ, host string
		size                          uint64
	}{
		{"file", "/v1/fs/stat?path=/a.txt", "/a.txt", "file", "/a.txt", 3},
		{"relative with session", "/v1/fs/stat?path=a.txt&sessionId=x", "/a.txt", "file", "/a.txt", 3},
		{"directory", "/v1/fs/stat?path=/sub", "/sub", "directory", "/sub", 0},
		{"root", "/v1/fs/stat?path=/", "/", "directory", "/", 0},
		{"symlink is followed", "/v1/fs/stat?path=/link", "/link", "file", "/a.txt", 3},
		{"dir symlink is followed", "/v1/fs/stat?path=/dirlink", "/dirlink", "directory", "/sub", 0},
		{"dotdot cannot leave", "/v1/fs/stat?path=/../../a.txt", "/a.txt", "file", "/a.txt", 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, req{Method: "GET", Target: c.target})
			wantStatus(t, r, 200)
			got := decode[api.FSStat](t, r)
			if got.Path != c.path || got.EntryType != c.typ {
				t.Errorf("got %s %s, want %s %s", got.Path, got.EntryType, c.path, c.typ)
			}
			if c.typ == "file" && got.Size != c.size {
				t.Errorf("size: got %d, want %d", got.Size, c.size)
			}
			checkModified(t, got.Modified, h.host(c.host))
		})
	}
	fails := []struct {
		name, target string
		status       int
		typ          string
	}{
		{"missing path", "/v1/fs/stat", 400, "invalid_request"},
		{"empty path", "/v1/fs/stat?path=", 400, "invalid_request"},
		{"NUL byte", "/v1/fs/stat?path=%00", 400, "invalid_request"},
		{"not found", "/v1/fs/stat?path=/nope", 404, "not_found"},
		{"dangling symlink", "/v1/fs/stat?path=/dangling", 404, "not_found"},
		{"through a file", "/v1/fs/stat?path=/a.txt/x", 400, "invalid_request"},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			p := wantProblem(t, h.do(t, req{Method: "GET", Target: c.target}), c.status, c.typ)
			if c.status == 404 && !strings.Contains(p.Detail, "/") {
				t.Errorf("detail %q: want the API path", p.Detail)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	fixture(t, h)
	big := strings.Repeat("0123456789", 100_000)
	h.writeFile(t, "/big", big)
	fi, _ := os.Stat(h.host("/a.txt"))

	cases := []struct {
		name   string
		target string
		header map[string]string
		status int
		body   string
	}{
		{"whole file", "/v1/fs/file?path=/a.txt", nil, 200, "abc"},
		{"relative with session", "/v1/fs/file?path=a.txt&session_id=s", nil, 200, "abc"},
		{"through a symlink", "/v1/fs/file?path=/link", nil, 200, "abc"},
		{"big file", "/v1/fs/file?path=/big", nil, 200, big},
		{"range", "/v1/fs/file?path=/a.txt", map[string]string{"Range": "bytes=1-2"}, 206, "bc"},
		{"range in big", "/v1/fs/file?path=/big", map[string]string{"Range": "bytes=999990-"}, 206, "0123456789"},
		{"not modified", "/v1/fs/file?path=/a.txt", map[string]string{"If-Modified-Since": fi.ModTime().Add(time.Hour).UTC().Format(http.TimeFormat)}, 304, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, req{Method: "GET", Target: c.target, Header: c.header})
			wantStatus(t, r, c.status)
			if string(r.Body) != c.body {
				t.Errorf("body: got %d bytes %.40q, want %d bytes %.40q", len(r.Body), r.Body, len(c.body), c.body)
			}
			if c.status != 304 {
				if ct := r.Header.Get("Content-Type"); ct != "application/octet-stream" {
					t.Errorf("Content-Type: got %q, want application/octet-stream", ct)
				}
				if got := r.Header.Get("Accept-Ranges"); got != "bytes" {
					t.Errorf("Accept-Ranges: got %q, want bytes", got)
				}
			}
		})
	}
	t.Run("unsatisfiable range", func(t *testing.T) {
		r := h.do(t, req{Method: "GET", Target: "/v1/fs/file?path=/a.txt", Header: map[string]string{"Range": "bytes=10-20"}})
		wantStatus(t, r, 416)
	})
	fails := []struct {
		name, target string
		status       int
		typ          string
	}{
		{"directory", "/v1/fs/file?path=/sub", 400, "invalid_request"},
		{"root", "/v1/fs/file?path=/", 400, "invalid_request"},
		{"not found", "/v1/fs/file?path=/nope", 404, "not_found"},
		{"missing path", "/v1/fs/file", 400, "invalid_request"},
		{"empty path", "/v1/fs/file?path=", 400, "invalid_request"},
		{"NUL byte", "/v1/fs/file?path=a%00", 400, "invalid_request"},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			wantProblem(t, h.do(t, req{Method: "GET", Target: c.target}), c.status, c.typ)
		})
	}
}

func TestEntriesTruncated(t *testing.T) {
	defer func(n int) { agentfs.MaxEntries = n }(agentfs.MaxEntries)
	agentfs.MaxEntries = 50 // the cap's logic, without 10,001 files on a slow disk
	h := newHarness(t, harnessOpts{})
	h.mkdir(t, "/big")
	for i := range agentfs.MaxEntries + 1 {
		if err := os.WriteFile(filepath.Join(h.host("/big"), fmt.Sprintf("f%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	r := h.do(t, req{Method: "GET", Target: "/v1/fs/entries?path=/big"})
	wantStatus(t, r, 200)
	if got := len(decode[[]api.FSEntry](t, r)); got != agentfs.MaxEntries {
		t.Errorf("entries: got %d, want %d", got, agentfs.MaxEntries)
	}
	if got := r.Header.Get(agentfs.HeaderTruncated); got != "true" {
		t.Errorf("%s: got %q, want true", agentfs.HeaderTruncated, got)
	}
}
