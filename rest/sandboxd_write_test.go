package rest

import (
	"bytes"
	"io"
	"io/fs"
	"mime/multipart"
	"os"
	"strings"
	"testing"

	"sandfs/core/journal"
	"sandfs/rest/httpkit"
)

// sandboxd writes and deletes: what lands on disk, what the journal tells
// (origin api, the actor of X-Sandfs-Actor), and each refusal.

// form is a multipart/form-data body: fields, then the file part when
// file is not nil.
func form(fields [][2]string, file []byte) (io.Reader, string) {
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for _, f := range fields {
		mw.WriteField(f[0], f[1])
	}
	if file != nil {
		fw, _ := mw.CreateFormFile("file", "upload.bin")
		fw.Write(file)
	}
	mw.Close()
	return &buf, mw.FormDataContentType()
}

func TestSandboxdPut(t *testing.T) {
	octet := "application/octet-stream"
	type check struct {
		path, content string
		mode          fs.FileMode
	}
	for _, c := range []struct {
		name, target string
		ctype        string
		body         func() io.Reader
		header       map[string]string
		status       int
		code         string      // the error code, status >= 400
		want         *check      // the file after
		form         [][2]string // a multipart form's fields (with file: its file part); body then unused
		file         []byte
		told         string // the path the journal tells, when not want.path (a symlinked parent: the path asked)
	}{
		{name: "new file, parents made", target: "/v1/files/w/x/new.txt", ctype: octet, body: text("new"), status: 204, want: &check{"/w/x/new.txt", "new", 0o644}},
		{name: "mode", target: "/v1/files/run.sh?mode=0755", ctype: octet, body: text("#!/bin/sh\n"), status: 204, want: &check{"/run.sh", "#!/bin/sh\n", 0o755}},
		{name: "mode 0000", target: "/v1/files/locked?mode=0000", ctype: octet, body: text("l"), status: 204, want: &check{"/locked", "l", 0}},
		{name: "overwrite takes the default mode", target: "/v1/files/d/e/c.txt", ctype: octet, body: text("over"), status: 204, want: &check{"/d/e/c.txt", "over", 0o644}},
		{name: "empty body", target: "/v1/files/zero", ctype: octet, body: text(""), status: 204, want: &check{"/zero", "", 0o644}},
		{name: "curl --data-binary", target: "/v1/files/form.txt", ctype: "application/x-www-form-urlencoded", body: text("a=b&c"), status: 204, want: &check{"/form.txt", "a=b&c", 0o644}},
		{name: "no content type", target: "/v1/files/none.txt", body: text("raw"), status: 204, want: &check{"/none.txt", "raw", 0o644}},
		{name: "encoded separators", target: "/v1/files/d%2Fenc.txt", ctype: octet, body: text("enc"), status: 204, want: &check{"/d/enc.txt", "enc", 0o644}},
		{name: "through a symlink within the root", target: "/v1/files/d/link-in", ctype: octet, body: text("via link"), status: 204, want: &check{"/d/b.txt", "via link", 0o644}},
		{name: "through an absolute symlink", target: "/v1/files/abs-link/abs.txt", ctype: octet, body: text("abs"), status: 204, want: &check{"/d/abs.txt", "abs", 0o644}, told: "/abs-link/abs.txt"},
		{name: "symlink climbing out lands inside", target: "/v1/files/d/link-up", ctype: octet, body: text("kept in"), status: 204, want: &check{"/secret.txt", "kept in", 0o644}},
		{name: "multipart", target: "/v1/files/up.bin?mode=0600", form: [][2]string{{"path", "/ignored"}}, file: []byte("\x00part"), status: 204, want: &check{"/up.bin", "\x00part", 0o600}},
		{name: "bad mode, three digits", target: "/v1/files/m?mode=755", ctype: octet, body: text("m"), status: 400, code: "INVALID_ARGUMENT"},
		{name: "bad mode, not octal", target: "/v1/files/m?mode=0899", ctype: octet, body: text("m"), status: 400, code: "INVALID_ARGUMENT"},
		{name: "bad mode, setuid", target: "/v1/files/m?mode=04755", ctype: octet, body: text("m"), status: 400, code: "INVALID_ARGUMENT"},
		{name: "bad mode, empty", target: "/v1/files/m?mode=", ctype: octet, body: text("m"), status: 400, code: "INVALID_ARGUMENT"},
		{name: "over a directory", target: "/v1/files/d", ctype: octet, body: text("x"), status: 400, code: "INVALID_ARGUMENT"},
		{name: "the root", target: "/v1/files/", ctype: octet, body: text("x"), status: 400, code: "INVALID_ARGUMENT"},
		{name: "under a file", target: "/v1/files/a.txt/x", ctype: octet, body: text("x"), status: 400, code: "INVALID_ARGUMENT"},
		{name: "multipart without a file", target: "/v1/files/m", form: [][2]string{{"x", "y"}}, status: 400, code: "INVALID_ARGUMENT"},
		{name: "dot-dot out", target: "/v1/files/..%2Fescape.txt", ctype: octet, body: text("out"), status: 403, code: "PERMISSION_DENIED"},
		{name: "over the upload limit", target: "/v1/files/big", ctype: octet, body: func() io.Reader { return bytes.NewReader(make([]byte, 1<<10+1)) }, status: 413, code: "RESOURCE_EXHAUSTED"},
		{name: "over the upload limit, chunked", target: "/v1/files/big", ctype: octet, body: func() io.Reader { return io.MultiReader(bytes.NewReader(make([]byte, 1<<10+1))) }, status: 413, code: "RESOURCE_EXHAUSTED"},
		{name: "If-None-Match on an existing file", target: "/v1/files/a.txt", ctype: octet, body: text("x"), header: map[string]string{"If-None-Match": "*"}, status: 412, code: "FAILED_PRECONDITION"},
		{name: "If-Match stale", target: "/v1/files/a.txt", ctype: octet, body: text("x"), header: map[string]string{"If-Match": `"stale"`}, status: 412, code: "FAILED_PRECONDITION"},
		{name: "If-None-Match on a new file", target: "/v1/files/fresh", ctype: octet, body: text("f"), header: map[string]string{"If-None-Match": "*"}, status: 204, want: &check{"/fresh", "f", 0o644}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, parent := sandboxdFixture(t)
			before := h.tree(t)
			hdr := map[string]string{"Content-Type": c.ctype, httpkit.ActorHeader: "kep-agent"}
			var body io.Reader
			if c.form != nil {
				body, hdr["Content-Type"] = form(c.form, c.file)
			} else {
				body = c.body()
			}
			for k, v := range c.header {
				hdr[k] = v
			}
			seq := h.srv.reg.Get("default").Journal().Seq()
			r := h.do(t, req{Method: "PUT", Target: c.target, Body: body, Header: hdr})
			if secret, _ := os.ReadFile(parent + "/secret.txt"); string(secret) != "OUTSIDE-SECRET" {
				t.Fatalf("the file outside the root changed: %q", secret)
			}
			if c.status >= 400 {
				wantSandboxdError(t, r, c.status, c.code)
				h.wantTree(t, before)
				return
			}
			wantStatus(t, r, c.status)
			if len(r.Body) != 0 {
				t.Errorf("204 with a body: %q", r.Body)
			}
			if r.Header.Get("ETag") == "" {
				t.Errorf("no ETag")
			}
			h.wantFile(t, c.want.path, c.want.content)
			if fi, err := os.Stat(h.host(c.want.path)); err == nil && fi.Mode().Perm() != c.want.mode {
				t.Errorf("mode: got %04o, want %04o", fi.Mode().Perm(), c.want.mode)
			}
			// The journal tells the write, by the actor the request named.
			path := c.want.path
			if c.told != "" {
				path = c.told
			}
			told := false
			for _, e := range journalSince(t, h, seq) {
				if e.Origin != journal.API || e.Actor != "kep-agent" {
					t.Errorf("journal %s %s: origin %s actor %q, want api kep-agent", e.Type, e.Path, e.Origin, e.Actor)
				}
				told = told || e.Path == path
			}
			if !told {
				t.Errorf("the journal does not tell %s: %+v", path, journalSince(t, h, seq))
			}
		})
	}
}

func text(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }

func TestSandboxdDelete(t *testing.T) {
	for _, c := range []struct {
		name, target string
		status       int
		code         string
		gone, kept   []string // paths absent and present after
	}{
		{name: "file", target: "/v1/files/a.txt", status: 204, gone: []string{"/a.txt"}},
		{name: "empty directory", target: "/v1/files/empty", status: 204, gone: []string{"/empty"}},
		{name: "non-empty directory", target: "/v1/files/d", status: 409, code: "CONFLICT", kept: []string{"/d/b.txt"}},
		{name: "non-empty directory, recursive", target: "/v1/files/d?recursive=true", status: 204, gone: []string{"/d"}},
		{name: "recursive=1", target: "/v1/files/d?recursive=1", status: 204, gone: []string{"/d"}},
		{name: "recursive=false", target: "/v1/files/d?recursive=false", status: 409, code: "CONFLICT", kept: []string{"/d"}},
		{name: "recursive not a boolean", target: "/v1/files/a.txt?recursive=maybe", status: 400, code: "INVALID_ARGUMENT", kept: []string{"/a.txt"}},
		{name: "symlink goes, not its target", target: "/v1/files/d/link-in", status: 204, gone: []string{"/d/link-in"}, kept: []string{"/d/b.txt"}},
		{name: "symlink climbing out goes itself", target: "/v1/files/d/link-up", status: 204, gone: []string{"/d/link-up"}},
		{name: "directory symlink, recursive", target: "/v1/files/abs-link?recursive=true", status: 204, gone: []string{"/abs-link"}, kept: []string{"/d/b.txt"}},
		{name: "missing", target: "/v1/files/nope", status: 404, code: "NOT_FOUND"},
		{name: "root", target: "/v1/files/", status: 409, code: "CONFLICT", kept: []string{"/a.txt", "/d/b.txt"}},
		{name: "root, recursive: emptied", target: "/v1/files/?recursive=true", status: 204, gone: []string{"/a.txt", "/d", "/empty", "/fifo", "/abs-link"}, kept: []string{"/"}},
		{name: "root by dot-dot within", target: "/v1/files/d%2F..?recursive=true", status: 204, gone: []string{"/a.txt", "/d"}, kept: []string{"/"}},
		{name: "dot-dot out", target: "/v1/files/..%2Fsecret.txt", status: 403, code: "PERMISSION_DENIED"},
		{name: "dot-dot out, recursive", target: "/v1/files/..?recursive=true", status: 403, code: "PERMISSION_DENIED", kept: []string{"/a.txt"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, parent := sandboxdFixture(t)
			before := h.tree(t)
			seq := h.srv.reg.Get("default").Journal().Seq()
			r := h.do(t, req{Method: "DELETE", Target: c.target, Header: map[string]string{httpkit.ActorHeader: "kep-agent"}})
			if secret, err := os.ReadFile(parent + "/secret.txt"); err != nil || string(secret) != "OUTSIDE-SECRET" {
				t.Fatalf("the file outside the root changed: %q %v", secret, err)
			}
			for _, p := range c.kept {
				if _, err := os.Lstat(h.host(p)); err != nil {
					t.Errorf("%s: want it kept: %v", p, err)
				}
			}
			if c.status >= 400 {
				wantSandboxdError(t, r, c.status, c.code)
				h.wantTree(t, before)
				return
			}
			wantStatus(t, r, c.status)
			for _, p := range c.gone {
				h.wantAbsent(t, p)
			}
			es := journalSince(t, h, seq)
			removed := map[string]bool{}
			for _, e := range es {
				if e.Origin != journal.API || e.Actor != "kep-agent" {
					t.Errorf("journal %s %s: origin %s actor %q, want api kep-agent", e.Type, e.Path, e.Origin, e.Actor)
				}
				if e.Type == journal.Remove {
					removed[e.Path] = true
				}
			}
			for _, p := range c.gone {
				if !removed[p] {
					t.Errorf("the journal tells no removal of %s: %+v", p, es)
				}
			}
		})
	}
}

// TestSandboxdClientRequests: the requests as the standard's own clients
// (kubernetes-sigs/agent-sandbox clients/go/sandbox/files.go and the
// Python client) build them: the whole path one escaped segment ("/" as
// %2F, "." and ".." as %2E and %2E%2E), raw bytes with
// application/octet-stream, HEAD for Exists, recursive=true for Delete.
func TestSandboxdClientRequests(t *testing.T) {
	h, _ := sandboxdFixture(t)
	octet := map[string]string{"Content-Type": "application/octet-stream"}
	for _, c := range []struct {
		method, target, body string
		status               int
	}{
		{"PUT", "/v1/files/dir%2Fscript.py", "print(1)\n", 204},
		{"PUT", "/v1/files/notes%2Fhello.txt", "hello", 204},
		{"GET", "/v1/files/dir%2Fscript.py", "", 200},
		{"HEAD", "/v1/files/notes%2Fhello.txt", "", 200},
		{"HEAD", "/v1/files/present.txt", "", 404},
		{"GET", "/v1/files/%2E", "", 200},
		{"GET", "/v1/files/%2E%2E", "", 403},
		{"PUT", "/v1/files/%2E%2E", "x", 403},
		{"DELETE", "/v1/files/dir", "", 409},
		{"DELETE", "/v1/files/dir?recursive=true", "", 204},
		{"DELETE", "/v1/files/notes%2Fhello.txt", "", 204},
	} {
		var body io.Reader
		var hdr map[string]string
		if c.method == "PUT" {
			body, hdr = strings.NewReader(c.body), octet
		}
		r := h.do(t, req{Method: c.method, Target: c.target, Body: body, Header: hdr})
		if r.Status != c.status {
			t.Errorf("%s %s: %d, want %d: %s", c.method, c.target, r.Status, c.status, r.Body)
		}
	}
	h.wantAbsent(t, "/dir")
	h.wantDir(t, "/notes")
	h.wantAbsent(t, "/notes/hello.txt")
}

// TestSandboxdEmptyRootNotUTF8: emptying the root leaves a top-level name
// that is not UTF-8 (no route names it) and removes one under a directory
// it removes.
func TestSandboxdEmptyRootNotUTF8(t *testing.T) {
	h, _ := sandboxdFixture(t)
	h.writeFile(t, "/top\xff", "x")
	h.writeFile(t, "/d/in\xff", "y")
	r := h.do(t, req{Method: "DELETE", Target: "/v1/files/?recursive=true"})
	wantStatus(t, r, 204)
	h.wantFile(t, "/top\xff", "x")
	h.wantAbsent(t, "/d")
	h.wantAbsent(t, "/a.txt")
	if r := h.do(t, req{Method: "GET", Target: "/v1/files/"}); r.Header.Get("X-Sandfs-Skipped-Names") != "1" {
		t.Errorf("listing the root: X-Sandfs-Skipped-Names %q, want 1: %s", r.Header.Get("X-Sandfs-Skipped-Names"), r.Body)
	}
}
