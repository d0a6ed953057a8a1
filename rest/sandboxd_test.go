package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/rest/sandboxd"
)

// The sandboxd family (KEP-539.2): reads and listings here, writes and
// deletes in sandboxd_write_test.go, hostile paths in
// sandboxd_hostile_test.go; sandboxd_spec_test.go holds it to the
// standard's own document.

// sandboxdFixture is a small tree: files, a directory, symlinks in and
// (naively) out of the root, a FIFO; and a secret beside the root.
func sandboxdFixture(t testing.TB) (*harness, string) {
	t.Helper()
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(parent, "secret.txt"), []byte("OUTSIDE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, harnessOpts{Root: root, Limits: Limits{MaxTarBody: 1 << 10}})
	h.writeFile(t, "/a.txt", "alpha\n")
	h.writeFile(t, "/bin.dat", "\x00\x01\x02\xff")
	h.writeFile(t, "/d/b.txt", "inner")
	h.writeFile(t, "/d/e/c.txt", "deep")
	if err := os.Chmod(h.host("/d/e/c.txt"), 0o755); err != nil {
		t.Fatal(err)
	}
	h.mkdir(t, "/empty")
	h.symlink(t, "b.txt", "/d/link-in")                               // within the root
	h.symlink(t, "/d", "/abs-link")                                   // absolute: the root's /d
	h.symlink(t, "../../secret.txt", "/d/link-up")                    // climbs out, naively
	h.symlink(t, filepath.Join(parent, "secret.txt"), "/d/link-host") // a host path, naively
	h.symlink(t, "nowhere", "/d/broken")                              // resolves to nothing
	if err := unix.Mkfifo(h.host("/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	return h, parent
}

// wantSandboxdError checks a sandboxd error: status, {code, message}.
func wantSandboxdError(t *testing.T, r resp, status int, code string) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status: got %d, want %d (body %s)", r.Status, status, r.Body)
	}
	var e sandboxd.Error
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatalf("error body %q: %v", r.Body, err)
	}
	if e.Code != code || e.Message == "" {
		t.Errorf("error: got %+v, want code %s and a message", e, code)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
}

func TestSandboxdRead(t *testing.T) {
	h, _ := sandboxdFixture(t)
	for _, c := range []struct {
		name, target string
		header       map[string]string
		status       int
		body         string // the bytes wanted (status 200/206)
		code         string // the error code wanted (status >= 400)
	}{
		{name: "file", target: "/v1/files/a.txt", status: 200, body: "alpha\n"},
		{name: "binary file", target: "/v1/files/bin.dat", status: 200, body: "\x00\x01\x02\xff"},
		{name: "nested file", target: "/v1/files/d/b.txt", status: 200, body: "inner"},
		{name: "encoded separators", target: "/v1/files/d%2Fe%2Fc.txt", status: 200, body: "deep"},
		{name: "double slash", target: "/v1/files//d//b.txt", status: 200, body: "inner"},
		{name: "dot-dot within the root", target: "/v1/files/d%2F..%2Fa.txt", status: 200, body: "alpha\n"},
		{name: "range", target: "/v1/files/a.txt", header: map[string]string{"Range": "bytes=1-3"}, status: 206, body: "lph"},
		{name: "symlink within the root", target: "/v1/files/d/link-in", status: 200, body: "inner"},
		{name: "absolute symlink is the root's", target: "/v1/files/abs-link/b.txt", status: 200, body: "inner"},
		{name: "missing", target: "/v1/files/nope.txt", status: 404, code: "NOT_FOUND"},
		{name: "missing parent", target: "/v1/files/nope/x", status: 404, code: "NOT_FOUND"},
		{name: "file as a directory", target: "/v1/files/a.txt/x", status: 400, code: "INVALID_ARGUMENT"},
		{name: "broken symlink", target: "/v1/files/d/broken", status: 404, code: "NOT_FOUND"},
		{name: "symlink climbing out resolves inside", target: "/v1/files/d/link-up", status: 404, code: "NOT_FOUND"},
		{name: "symlink to a host path resolves inside", target: "/v1/files/d/link-host", status: 404, code: "NOT_FOUND"},
		{name: "dot-dot out of the root", target: "/v1/files/..%2Fsecret.txt", status: 403, code: "PERMISSION_DENIED"},
		{name: "dot-dot out through a directory", target: "/v1/files/d%2F..%2F..%2Fsecret.txt", status: 403, code: "PERMISSION_DENIED"},
		{name: "fifo", target: "/v1/files/fifo", status: 400, code: "INVALID_ARGUMENT"},
		{name: "not UTF-8", target: "/v1/files/a%FF", status: 400, code: "INVALID_ARGUMENT"},
		{name: "NUL", target: "/v1/files/a%00b", status: 400, code: "INVALID_ARGUMENT"},
		{name: "range past the end", target: "/v1/files/a.txt", header: map[string]string{"Range": "bytes=100-"}, status: 416, code: "OUT_OF_RANGE"},
		{name: "unknown sandbox", target: "/v1/files/a.txt", header: map[string]string{"X-Sandfs-Sandbox": "nope"}, status: 404, code: "NOT_FOUND"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, req{Method: "GET", Target: c.target, Header: c.header})
			if strings.Contains(string(r.Body), "OUTSIDE-SECRET") {
				t.Fatalf("the answer carries the file outside the root")
			}
			if c.status >= 400 {
				wantSandboxdError(t, r, c.status, c.code)
				// HEAD answers the same status, with no body.
				hr := h.do(t, req{Method: "HEAD", Target: c.target, Header: c.header})
				if hr.Status != c.status || len(hr.Body) != 0 {
					t.Errorf("HEAD: %d %q, want %d and no body", hr.Status, hr.Body, c.status)
				}
				return
			}
			wantStatus(t, r, c.status)
			if string(r.Body) != c.body {
				t.Errorf("body: got %q, want %q", r.Body, c.body)
			}
			if ct := r.Header.Get("Content-Type"); ct != "application/octet-stream" {
				t.Errorf("Content-Type: got %q", ct)
			}
			hr := h.do(t, req{Method: "HEAD", Target: c.target, Header: c.header})
			if hr.Status != c.status || len(hr.Body) != 0 || hr.Header.Get("Content-Length") != strconv.Itoa(len(c.body)) {
				t.Errorf("HEAD: %d %q Content-Length %q, want %d, no body, %d", hr.Status, hr.Body, hr.Header.Get("Content-Length"), c.status, len(c.body))
			}
		})
	}
}

func TestSandboxdList(t *testing.T) {
	h, _ := sandboxdFixture(t)
	mtime := time.Date(2026, 5, 4, 3, 2, 1, 0, time.UTC)
	if err := os.Chtimes(h.host("/d/b.txt"), mtime, mtime); err != nil {
		t.Fatal(err)
	}
	list := func(t *testing.T, target string) sandboxd.DirectoryListing {
		r := h.do(t, req{Method: "GET", Target: target})
		wantStatus(t, r, 200)
		return decode[sandboxd.DirectoryListing](t, r)
	}
	type ent struct{ name, typ, mode string }
	for _, c := range []struct {
		name, target, path string
		want               []ent
	}{
		// The symlinks: link-in is what it names; link-up, link-host and
		// broken resolve to nothing within the root and are left out.
		{"directory", "/v1/files/d", "/d", []ent{{"b.txt", "file", "0644"}, {"e", "directory", "0755"}, {"link-in", "file", "0644"}}},
		{"trailing slash", "/v1/files/d/", "/d", []ent{{"b.txt", "file", "0644"}, {"e", "directory", "0755"}, {"link-in", "file", "0644"}}},
		{"nested", "/v1/files/d/e", "/d/e", []ent{{"c.txt", "file", "0755"}}},
		{"empty", "/v1/files/empty", "/empty", []ent{}},
		{"root", "/v1/files/", "/", []ent{{"a.txt", "file", "0644"}, {"abs-link", "directory", "0755"}, {"bin.dat", "file", "0644"}, {"d", "directory", "0755"}, {"empty", "directory", "0755"}, {"fifo", "file", "0644"}}},
		{"through an absolute symlink", "/v1/files/abs-link/e", "/abs-link/e", []ent{{"c.txt", "file", "0755"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := list(t, c.target)
			if l.Path != c.path {
				t.Errorf("path: got %q, want %q", l.Path, c.path)
			}
			var got []ent
			for _, e := range l.Entries {
				got = append(got, ent{e.Name, e.Type, e.Mode})
				if _, err := time.Parse(time.RFC3339, e.ModifiedAt); err != nil {
					t.Errorf("%s: modified_at %q: %v", e.Name, e.ModifiedAt, err)
				}
			}
			if len(got) != len(c.want) || (len(got) > 0 && !equalEnts(got, c.want)) {
				t.Errorf("entries: got %v, want %v", got, c.want)
			}
		})
	}
	// Sizes and times are the files' (a symlink's are its target's).
	for _, e := range list(t, "/v1/files/d").Entries {
		switch e.Name {
		case "b.txt", "link-in":
			if e.Size != 5 || e.ModifiedAt != "2026-05-04T03:02:01Z" {
				t.Errorf("%s: size %d modified_at %s, want 5 and 2026-05-04T03:02:01Z", e.Name, e.Size, e.ModifiedAt)
			}
		}
	}
	// HEAD of a directory: 200, JSON, no body.
	r := h.do(t, req{Method: "HEAD", Target: "/v1/files/d"})
	if r.Status != 200 || len(r.Body) != 0 || r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("HEAD directory: %d %q %q", r.Status, r.Header.Get("Content-Type"), r.Body)
	}
	// A listing cut at MaxEntries says so.
	defer func(n int) { sandboxd.MaxEntries = n }(sandboxd.MaxEntries)
	sandboxd.MaxEntries = 2
	r = h.do(t, req{Method: "GET", Target: "/v1/files/"})
	if l := decode[sandboxd.DirectoryListing](t, r); len(l.Entries) != 2 || r.Header.Get(sandboxd.HeaderTruncated) != "true" {
		t.Errorf("cut listing: %d entries, %s %q", len(l.Entries), sandboxd.HeaderTruncated, r.Header.Get(sandboxd.HeaderTruncated))
	}
}

func equalEnts[T comparable](a, b []T) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestSandboxdRouting: the family's other answers: a method no route
// takes, /v1/files without its slash, and the routes in the table.
func TestSandboxdRouting(t *testing.T) {
	h, _ := sandboxdFixture(t)
	want := map[string]bool{"GET /v1/files/*path": true, "HEAD /v1/files/*path": true, "PUT /v1/files/*path": true, "DELETE /v1/files/*path": true, "GET /v1/metadata": true, "GET /v1/watch": true}
	for _, rt := range h.srv.Routes() {
		if rt.Family == FamilySandboxd {
			if !want[rt.Method+" "+rt.Path] || !rt.Auth {
				t.Errorf("unexpected sandboxd route %s %s (auth %v)", rt.Method, rt.Path, rt.Auth)
			}
			delete(want, rt.Method+" "+rt.Path)
		}
	}
	if len(want) > 0 {
		t.Errorf("routes missing: %v", want)
	}
	r := h.do(t, req{Method: "POST", Target: "/v1/files/a.txt"})
	wantSandboxdError(t, r, 405, "UNIMPLEMENTED")
	if r.Header.Get("Allow") == "" {
		t.Errorf("405 without Allow")
	}
	// httprouter redirects a catch-all's own root without its slash.
	c := *h.ts.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.Get(h.ts.URL + "/v1/files")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 301 || res.Header.Get("Location") != "/v1/files/" {
		t.Errorf("GET /v1/files: %d Location %q, want 301 /v1/files/", res.StatusCode, res.Header.Get("Location"))
	}
}

func TestSandboxdMetadata(t *testing.T) {
	h := newHarness(t, harnessOpts{Token: "tok"})
	defer func(f func() []string) { sandboxd.Environ = f }(sandboxd.Environ)
	sandboxd.Environ = func() []string {
		return []string{"SANDBOX_ID=sb-1", "SANDBOX_WORKSPACE=/workspace", "SANDBOX_EMPTY=", "SANDBOX_EQ=a=b",
			"SANDBOX_API_TOKEN=x", "SANDBOX_secret_thing=x", "SANDBOX_SSH_KEY=x", "SANDBOX_CERT_PEM=x", "SANDBOX_AUTHZ=x",
			"HOME=/root", "sandbox_lower=x", "PATH=/bin", "SANDBOX_NOVALUE"}
	}
	r := h.do(t, req{Method: "GET", Target: "/v1/metadata"})
	wantStatus(t, r, 200)
	got := decode[sandboxd.MetadataResponse](t, r).Env
	want := map[string]string{"SANDBOX_ID": "sb-1", "SANDBOX_WORKSPACE": "/workspace", "SANDBOX_EMPTY": "", "SANDBOX_EQ": "a=b"}
	if len(got) != len(want) {
		t.Errorf("env: got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("env[%s]: got %q, want %q", k, got[k], v)
		}
	}
	// An empty environment is {"env":{}}, never null.
	sandboxd.Environ = func() []string { return nil }
	if r := h.do(t, req{Method: "GET", Target: "/v1/metadata"}); strings.TrimSpace(string(r.Body)) != `{"env":{}}` {
		t.Errorf("empty: %s", r.Body)
	}
	wantSandboxdError(t, h.do(t, req{Method: "GET", Target: "/v1/metadata", NoAuth: true}), 401, "UNAUTHENTICATED")
}

// TestSandboxdHealth: /v1/health carries uptime_seconds, and is 503 in
// the standard's error shape once the daemon is stopping; /v1/ping (the
// liveness probe) stays 200.
func TestSandboxdHealth(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	type probe struct {
		Status        string `json:"status"`
		UptimeSeconds *int64 `json:"uptime_seconds"`
		Code          string `json:"code"`
	}
	for _, p := range []string{"/health", "/v1/health", "/v1/ping"} {
		r := h.do(t, req{Method: "GET", Target: p})
		wantStatus(t, r, 200)
		ok := decode[probe](t, r)
		if ok.Status != "ok" || ok.UptimeSeconds == nil || *ok.UptimeSeconds < 0 || ok.Code != "" {
			t.Errorf("%s: %s", p, r.Body)
		}
	}
	h.srv.started = h.srv.started.Add(-90 * time.Second)
	r := h.do(t, req{Method: "GET", Target: "/v1/health"})
	if u := decode[map[string]any](t, r)["uptime_seconds"]; u != float64(90) {
		t.Errorf("uptime_seconds: got %v, want 90", u)
	}
	h.srv.EndStreams(context.Background())
	for _, p := range []string{"/health", "/v1/health"} {
		r := h.do(t, req{Method: "GET", Target: p})
		wantStatus(t, r, 503)
		e := decode[map[string]any](t, r)
		if e["code"] != "UNAVAILABLE" || e["message"] != "the daemon is stopping" || e["status"] != "stopping" {
			t.Errorf("%s stopping: %s", p, r.Body)
		}
	}
	wantStatus(t, h.do(t, req{Method: "GET", Target: "/v1/ping"}), 200)
}

// journalSince is the journal of sandbox "default" after seq.
func journalSince(t *testing.T, h *harness, seq uint64) []journal.Event {
	t.Helper()
	es, _ := h.srv.reg.Get("default").Journal().Since(seq, 1000)
	return es
}
