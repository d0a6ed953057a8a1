package rest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"net"
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

func TestWriteFile(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	fixture(t, h)
	big := bytes.Repeat([]byte("x"), 8<<20)
	cases := []struct {
		name   string
		target string
		body   []byte
		path   string // answer path
		check  string // host path whose content must be body
	}{
		{"new file", "/v1/fs/file?path=/new.txt", []byte("hello"), "/new.txt", "/new.txt"},
		{"creates parents", "/v1/fs/file?path=/p/q/r.txt&sessionId=s", []byte("deep"), "/p/q/r.txt", "/p/q/r.txt"},
		{"replaces", "/v1/fs/file?path=/a.txt", []byte("replaced"), "/a.txt", "/a.txt"},
		{"relative, cleaned", "/v1/fs/file?path=sub/../sub/./w", []byte("w"), "/sub/w", "/sub/w"},
		{"empty body", "/v1/fs/file?path=/empty", nil, "/empty", "/empty"},
		{"through a symlink", "/v1/fs/file?path=/link", []byte("via link"), "/link", "/a.txt"},
		{"big body", "/v1/fs/file?path=/big", big, "/big", "/big"},
		{"dotdot stays inside", "/v1/fs/file?path=/../../escape", []byte("in"), "/escape", "/escape"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, req{Method: "PUT", Target: c.target, Body: bytes.NewReader(c.body)})
			wantStatus(t, r, 200)
			got := decode[api.FSWrite](t, r)
			if got.Path != c.path || got.BytesWritten != uint64(len(c.body)) {
				t.Errorf("got {%s %d}, want {%s %d}", got.Path, got.BytesWritten, c.path, len(c.body))
			}
			h.wantFile(t, c.check, string(c.body))
			wantNoTemp(t, filepath.Dir(h.host(c.check)))
		})
	}
	if fi, err := os.Lstat(h.host("/link")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("/link: want still a symlink (err %v)", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(h.root), "escape")); err == nil {
		t.Errorf("a write escaped the root")
	}

	fails := []struct {
		name, target string
		status       int
		typ          string
	}{
		{"directory", "/v1/fs/file?path=/sub", 400, "invalid_request"},
		{"missing path", "/v1/fs/file", 400, "invalid_request"},
		{"empty path", "/v1/fs/file?path=", 400, "invalid_request"},
		{"NUL byte", "/v1/fs/file?path=/x%00y", 400, "invalid_request"},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			before := h.tree(t)
			wantProblem(t, h.do(t, req{Method: "PUT", Target: c.target, Body: strings.NewReader("data")}), c.status, c.typ)
			h.wantTree(t, before)
		})
	}
}

// TestWriteFileCutShort sends a PUT announcing more bytes than it sends and
// closes the connection: the old file stays whole and no temp file is left.
func TestWriteFileCutShort(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/f", "old content")
	conn, err := net.Dial("tcp", h.ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	// Drain the served signals of earlier requests (none) then send.
	head := "PUT /v1/fs/file?path=/f HTTP/1.1\r\nHost: sandfs\r\nContent-Length: 1000000\r\n\r\n"
	if _, err := io.WriteString(conn, head+strings.Repeat("n", 64<<10)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // let the handler start streaming
	conn.Close()
	select {
	case <-h.served:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not return after the client went away")
	}
	h.wantFile(t, "/f", "old content")
	wantNoTemp(t, h.root)
}

func TestDeleteEntry(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	fixture(t, h)
	h.mkdir(t, "/empty")
	h.writeFile(t, "/full/x/y", "y")
	h.writeFile(t, "/rec/x/y", "y")

	cases := []struct {
		name, target, path string
		gone               string
	}{
		{"file", "/v1/fs/entry?path=/a.txt&sessionId=s", "/a.txt", "/a.txt"},
		{"empty dir", "/v1/fs/entry?path=empty", "/empty", "/empty"},
		{"recursive", "/v1/fs/entry?path=/rec&recursive=true", "/rec", "/rec"},
		{"symlink, not its target", "/v1/fs/entry?path=/dirlink&recursive=true", "/dirlink", "/dirlink"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, req{Method: "DELETE", Target: c.target})
			wantStatus(t, r, 200)
			if got := decode[api.FSAction](t, r).Path; got != c.path {
				t.Errorf("path: got %q, want %q", got, c.path)
			}
			h.wantAbsent(t, c.gone)
		})
	}
	h.wantFile(t, "/sub/inner", "inner!")

	fails := []struct {
		name, target string
		status       int
		typ          string
	}{
		{"non-empty without recursive", "/v1/fs/entry?path=/full", 409, "conflict"},
		{"non-empty with recursive=false", "/v1/fs/entry?path=/full&recursive=false", 409, "conflict"},
		{"bad recursive", "/v1/fs/entry?path=/full&recursive=yes", 400, "invalid_request"},
		{"not found", "/v1/fs/entry?path=/nope", 404, "not_found"},
		{"missing path", "/v1/fs/entry", 400, "invalid_request"},
		{"empty path", "/v1/fs/entry?path=", 400, "invalid_request"},
		{"NUL byte", "/v1/fs/entry?path=/full%00", 400, "invalid_request"},
		{"the root", "/v1/fs/entry?path=/&recursive=true", 400, "invalid_request"},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			before := h.tree(t)
			wantProblem(t, h.do(t, req{Method: "DELETE", Target: c.target}), c.status, c.typ)
			h.wantTree(t, before)
		})
	}
	h.wantFile(t, "/full/x/y", "y")
}

func TestMkdir(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	fixture(t, h)
	cases := []struct{ name, target, path string }{
		{"new", "/v1/fs/mkdir?path=/d", "/d"},
		{"parents", "/v1/fs/mkdir?path=/e/f/g&sessionId=s", "/e/f/g"},
		{"existing dir", "/v1/fs/mkdir?path=/sub", "/sub"},
		{"relative", "/v1/fs/mkdir?path=sub/h", "/sub/h"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, req{Method: "POST", Target: c.target})
			wantStatus(t, r, 200)
			if got := decode[api.FSAction](t, r).Path; got != c.path {
				t.Errorf("path: got %q, want %q", got, c.path)
			}
			h.wantDir(t, c.path)
		})
	}
	h.wantFile(t, "/sub/inner", "inner!")
	fails := []struct {
		name, target string
		status       int
		typ          string
	}{
		{"existing file", "/v1/fs/mkdir?path=/a.txt", 409, "conflict"},
		{"missing path", "/v1/fs/mkdir", 400, "invalid_request"},
		{"empty path", "/v1/fs/mkdir?path=", 400, "invalid_request"},
		{"NUL byte", "/v1/fs/mkdir?path=/q%00", 400, "invalid_request"},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			before := h.tree(t)
			wantProblem(t, h.do(t, req{Method: "POST", Target: c.target}), c.status, c.typ)
			h.wantTree(t, before)
		})
	}
}

func TestMove(t *testing.T) {
	h := newHarness(t, harnessOpts{Limits: Limits{MaxJSONBody: 256}})
	fixture(t, h)
	h.writeFile(t, "/m1", "one")
	h.writeFile(t, "/m2", "two")
	h.writeFile(t, "/over-src", "new")
	h.writeFile(t, "/over-dst", "old")

	cases := []struct {
		name, body, from, to string
		content              string // content at to afterwards
	}{
		{"rename", `{"from":"/m1","to":"/m1-renamed"}`, "/m1", "/m1-renamed", "one"},
		{"into new parents", `{"from":"m2","to":"deep/er/m2","overwrite":null}`, "/m2", "/deep/er/m2", "two"},
		{"overwrite", `{"from":"/over-src","to":"/over-dst","overwrite":true}`, "/over-src", "/over-dst", "new"},
		{"unknown fields ignored", `{"from":"/m1-renamed","to":"/m1","extra":[1,2]}`, "/m1-renamed", "/m1", "one"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, req{Method: "POST", Target: "/v1/fs/move?sessionId=s", Body: strings.NewReader(c.body),
				Header: map[string]string{"Content-Type": "application/json"}})
			wantStatus(t, r, 200)
			got := decode[api.FSMove](t, r)
			if got.From != c.from || got.To != c.to {
				t.Errorf("got {%s %s}, want {%s %s}", got.From, got.To, c.from, c.to)
			}
			h.wantAbsent(t, c.from)
			h.wantFile(t, c.to, c.content)
		})
	}

	fails := []struct {
		name, body string
		status     int
		typ        string
	}{
		{"onto existing", `{"from":"/a.txt","to":"/m1"}`, 409, "conflict"},
		{"onto existing, overwrite false", `{"from":"/a.txt","to":"/m1","overwrite":false}`, 409, "conflict"},
		{"source missing", `{"from":"/nope","to":"/x"}`, 404, "not_found"},
		{"malformed JSON", `{"from":"/a.txt",`, 400, "invalid_request"},
		{"syntax error", `{"from" "/a.txt"}`, 400, "invalid_request"},
		{"wrong type", `{"from":1,"to":"/x"}`, 400, "invalid_request"},
		{"wrong overwrite type", `{"from":"/a.txt","to":"/x","overwrite":"yes"}`, 400, "invalid_request"},
		{"missing to", `{"from":"/a.txt"}`, 400, "invalid_request"},
		{"missing from", `{"to":"/x"}`, 400, "invalid_request"},
		{"empty from", `{"from":"","to":"/x"}`, 400, "invalid_request"},
		{"NUL in to", `{"from":"/a.txt","to":"/x\u0000"}`, 400, "invalid_request"},
		{"empty body", ``, 400, "invalid_request"},
		{"null body", `null`, 400, "invalid_request"},
		{"array body", `[]`, 400, "invalid_request"},
		{"trailing data", `{"from":"/a.txt","to":"/x"} {}`, 400, "invalid_request"},
		{"too large", `{"from":"/a.txt","to":"/x","pad":"` + strings.Repeat("p", 300) + `"}`, 413, "invalid_request"},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			before := h.tree(t)
			p := wantProblem(t, h.do(t, req{Method: "POST", Target: "/v1/fs/move", Body: strings.NewReader(c.body)}), c.status, c.typ)
			h.wantTree(t, before)
			t.Logf("detail: %s", p.Detail)
		})
	}
	t.Run("too large, chunked", func(t *testing.T) {
		before := h.tree(t)
		body := io.MultiReader(strings.NewReader(`{"from":"/a.txt","to":"/x","pad":"`), strings.NewReader(strings.Repeat("p", 300)+`"}`))
		r := h.do(t, req{Method: "POST", Target: "/v1/fs/move", Body: io.NopCloser(body)}) // no length: chunked
		wantProblem(t, r, 413, "invalid_request")
		h.wantTree(t, before)
	})
	h.wantFile(t, "/a.txt", "abc")
}

// tarEntry is one entry of a test archive.
type tarEntry struct {
	name, body, link string
	typ              byte
}

func buildTar(t *testing.T, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Typeflag: e.typ, Mode: 0o644, Size: int64(len(e.body)), Linkname: e.link, ModTime: time.Now()}
		switch e.typ {
		case tar.TypeDir:
			hdr.Mode, hdr.Size = 0o755, 0
		case tar.TypeSymlink, tar.TypeLink:
			hdr.Size = 0
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Size > 0 {
			io.WriteString(tw, e.body)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestUploadBatch(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/dest/keep", "kept")
	h.writeFile(t, "/dest/top.txt", "old top")
	archive := buildTar(t, []tarEntry{
		{name: "d/", typ: tar.TypeDir},
		{name: "d/x.txt", body: "ex", typ: tar.TypeReg},
		{name: "top.txt", body: "top", typ: tar.TypeReg},
	})
	t.Run("files and dirs, merged", func(t *testing.T) {
		r := h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch?path=/dest&sessionId=s", Body: bytes.NewReader(archive),
			Header: map[string]string{"Content-Type": "application/x-tar"}})
		wantStatus(t, r, 200)
		got := decode[api.FSUploadBatch](t, r)
		want := []string{"/dest/d", "/dest/d/x.txt", "/dest/top.txt"}
		if strings.Join(got.Paths, ",") != strings.Join(want, ",") || got.Truncated {
			t.Errorf("got %v truncated=%v, want %v truncated=false", got.Paths, got.Truncated, want)
		}
		h.wantDir(t, "/dest/d")
		h.wantFile(t, "/dest/d/x.txt", "ex")
		h.wantFile(t, "/dest/top.txt", "top")
		h.wantFile(t, "/dest/keep", "kept")
	})
	t.Run("default path, new dir, content-type with params", func(t *testing.T) {
		r := h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch", Body: bytes.NewReader(archive),
			Header: map[string]string{"Content-Type": "application/x-tar; charset=binary"}})
		wantStatus(t, r, 200)
		got := decode[api.FSUploadBatch](t, r)
		if want := "/d,/d/x.txt,/top.txt"; strings.Join(got.Paths, ",") != want {
			t.Errorf("paths: got %v, want %s", got.Paths, want)
		}
		h.wantFile(t, "/d/x.txt", "ex")
	})
	t.Run("empty archive", func(t *testing.T) {
		r := h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch?path=/empty-up", Body: bytes.NewReader(buildTar(t, nil)),
			Header: map[string]string{"Content-Type": "application/x-tar"}})
		wantStatus(t, r, 200)
		got := decode[api.FSUploadBatch](t, r)
		if got.Paths == nil || len(got.Paths) != 0 || got.Truncated {
			t.Errorf("got %#v, want {[] false}", got)
		}
		if !bytes.Contains(r.Body, []byte(`"paths":[]`)) {
			t.Errorf("body %s: want paths as [] not null", r.Body)
		}
	})
	t.Run("truncated at 1024", func(t *testing.T) {
		var many []tarEntry
		for i := range 1030 {
			many = append(many, tarEntry{name: fmt.Sprintf("f%04d", i), body: fmt.Sprint(i), typ: tar.TypeReg})
		}
		r := h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch?path=/many", Body: bytes.NewReader(buildTar(t, many)),
			Header: map[string]string{"Content-Type": "application/x-tar"}})
		wantStatus(t, r, 200)
		got := decode[api.FSUploadBatch](t, r)
		if len(got.Paths) != 1024 || !got.Truncated {
			t.Fatalf("got %d paths truncated=%v, want 1024 truncated=true", len(got.Paths), got.Truncated)
		}
		if got.Paths[0] != "/many/f0000" || got.Paths[1023] != "/many/f1023" {
			t.Errorf("paths: got first %q last %q, want /many/f0000 … /many/f1023", got.Paths[0], got.Paths[1023])
		}
		ents, _ := os.ReadDir(h.host("/many"))
		if len(ents) != 1030 {
			t.Errorf("disk: got %d files, want 1030", len(ents))
		}
		h.wantFile(t, "/many/f1029", "1029")
	})

	fails := []struct {
		name   string
		ctype  string
		body   []byte
		status int
		typ    string
	}{
		{"no content type", "", archive, 415, "unsupported_media_type"},
		{"wrong content type", "application/json", archive, 415, "unsupported_media_type"},
		{"gzip", "application/gzip", archive, 415, "unsupported_media_type"},
		{"dotdot entry", "application/x-tar", buildTar(t, []tarEntry{{name: "ok", body: "ok", typ: tar.TypeReg}, {name: "../evil", body: "x", typ: tar.TypeReg}}), 400, "invalid_request"},
		{"absolute entry", "application/x-tar", buildTar(t, []tarEntry{{name: "/abs", body: "x", typ: tar.TypeReg}}), 400, "invalid_request"},
		{"escaping symlink", "application/x-tar", buildTar(t, []tarEntry{{name: "l", link: "../../etc", typ: tar.TypeSymlink}}), 400, "invalid_request"},
		{"device", "application/x-tar", buildTar(t, []tarEntry{{name: "dev", typ: tar.TypeChar}}), 400, "invalid_request"},
		{"garbage", "application/x-tar", bytes.Repeat([]byte("garbage!"), 128), 400, "invalid_request"},
		{"truncated archive", "application/x-tar", archive[:700], 400, "invalid_request"},
	}
	for _, c := range fails {
		t.Run(c.name, func(t *testing.T) {
			before := h.tree(t)
			hdr := map[string]string{}
			if c.ctype != "" {
				hdr["Content-Type"] = c.ctype
			}
			p := wantProblem(t, h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch?path=/bad", Body: bytes.NewReader(c.body), Header: hdr}), c.status, c.typ)
			h.wantTree(t, before)
			t.Logf("detail: %s", p.Detail)
		})
	}
}

func TestUploadBatchTooLarge(t *testing.T) {
	h := newHarness(t, harnessOpts{Limits: Limits{MaxTarBody: 4096}})
	var entries []tarEntry
	for i := range 10 {
		entries = append(entries, tarEntry{name: fmt.Sprintf("f%d", i), body: strings.Repeat("z", 1000), typ: tar.TypeReg})
	}
	archive := buildTar(t, entries)
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			var body io.Reader = bytes.NewReader(archive)
			if chunked {
				body = io.NopCloser(body)
			}
			before := h.tree(t)
			r := h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch?path=/up", Body: body,
				Header: map[string]string{"Content-Type": "application/x-tar"}})
			wantProblem(t, r, 413, "invalid_request")
			h.wantTree(t, before)
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
