package rest

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandfs/api"
)

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
