package rest

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
	"sandfs/rest/aio"
	"sandfs/rest/httpkit"
	"sandfs/rest/named"
)

// specialNode makes, at p in h's root, a node that opening for bytes
// turns into ENXIO or a block: a unix socket ("sock"), a FIFO nobody reads
// or writes ("fifo"), or a FIFO a process holds open for reading and
// writing ("fifo-open"), or a character device with no driver ("dev"). Whatever was at p goes first. It returns a
// description of the node (type, inode, size) for "unchanged" checks.
func specialNode(t *testing.T, h *harness, kind, p string) string {
	t.Helper()
	os.RemoveAll(h.host(p))
	switch kind {
	case "sock":
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: h.host(p), Net: "unix"})
		if err != nil {
			t.Fatalf("listen unix: %v", err)
		}
		l.SetUnlinkOnClose(false)
		t.Cleanup(func() { l.Close() })
	case "dev": // a character device with no driver (major 0 is unnamed): opening it is ENXIO
		if os.Geteuid() != 0 {
			testenv.Skip(t, nil, "mknod of a device needs root")
		}
		if err := unix.Mknod(h.host(p), unix.S_IFCHR|0o666, int(unix.Mkdev(240, 0))); err != nil {
			t.Fatalf("mknod: %v", err)
		}
	case "fifo", "fifo-open":
		if err := unix.Mkfifo(h.host(p), 0o644); err != nil {
			t.Fatalf("mkfifo: %v", err)
		}
		if kind == "fifo-open" {
			fd, err := unix.Open(h.host(p), unix.O_RDWR|unix.O_NONBLOCK, 0)
			if err != nil {
				t.Fatalf("open fifo: %v", err)
			}
			t.Cleanup(func() { unix.Close(fd) })
		}
	}
	return describeNode(t, h, p)
}

func describeNode(t *testing.T, h *harness, p string) string {
	var st unix.Stat_t
	if err := unix.Lstat(h.host(p), &st); err != nil {
		return "lstat: " + err.Error()
	}
	return fmt.Sprintf("mode %o ino %d size %d", st.Mode, st.Ino, st.Size)
}

// TestSpecialFilesAreInvalidTargets runs every byte and text route of every
// family against a unix socket and FIFOs in the root: each answers 400
// invalid_target in its family's shape (200 success:false on /v1/file),
// never a 5xx, never hangs, and leaves the node as it was.
func TestSpecialFilesAreInvalidTargets(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	type rc struct {
		name, method, target, family, body, ct string
		form                                   bool // body: a multipart upload of "new" to path
	}
	js := func(f string, args ...any) string { return fmt.Sprintf(f, args...) }
	routes := func(p string) []rc {
		q := "path=" + p
		return []rc{
			{"agent read", "GET", "/v1/fs/file?" + q, FamilyAgent, "", "", false},
			{"agent write", "PUT", "/v1/fs/file?" + q, FamilyAgent, "new", "application/octet-stream", false},
			{"v1 read", "POST", "/v1/file/read", FamilyAIOv1, js(`{"file":%q}`, p), "application/json", false},
			{"v1 write", "POST", "/v1/file/write", FamilyAIOv1, js(`{"file":%q,"content":"new"}`, p), "application/json", false},
			{"v1 write append", "POST", "/v1/file/write", FamilyAIOv1, js(`{"file":%q,"content":"new","append":true}`, p), "application/json", false},
			{"v1 replace", "POST", "/v1/file/replace", FamilyAIOv1, js(`{"file":%q,"old_str":"a","new_str":"b"}`, p), "application/json", false},
			{"v1 editor view", "POST", "/v1/file/str_replace_editor", FamilyAIOv1, js(`{"command":"view","path":%q}`, p), "application/json", false},
			{"v1 editor str_replace", "POST", "/v1/file/str_replace_editor", FamilyAIOv1, js(`{"command":"str_replace","path":%q,"old_str":"a","new_str":"b"}`, p), "application/json", false},
			{"v1 editor insert", "POST", "/v1/file/str_replace_editor", FamilyAIOv1, js(`{"command":"insert","path":%q,"insert_line":0,"new_str":"b"}`, p), "application/json", false},
			{"v1 search", "POST", "/v1/file/search", FamilyAIOv1, js(`{"file":%q,"regex":"a"}`, p), "application/json", false},
			{"v1 download", "GET", "/v1/file/download?" + q, FamilyAIOv2, "", "", false},
			{"v2 read", "GET", "/v2/fs/read?" + q, FamilyAIOv2, "", "", false},
			{"v2 write", "POST", "/v2/fs/write", FamilyAIOv2, js(`{"path":%q,"content":"new"}`, p), "application/json", false},
			{"v2 write append", "POST", "/v2/fs/write", FamilyAIOv2, js(`{"path":%q,"content":"new","append":true}`, p), "application/json", false},
			{"v2 edit str_replace", "POST", "/v2/fs/edit", FamilyAIOv2, js(`{"command":"str_replace","path":%q,"old_str":"a","new_str":"b"}`, p), "application/json", false},
			{"v2 edit insert", "POST", "/v2/fs/edit", FamilyAIOv2, js(`{"command":"insert","path":%q,"insert_line":0,"new_str":"b"}`, p), "application/json", false},
			{"v2 download", "GET", "/v2/fs/download?" + q, FamilyAIOv2, "", "", false},
			{"v2 download head", "HEAD", "/v2/fs/download?" + q, FamilyAIOv2, "", "", false},
			{"named read", "GET", "/v1/sandboxes/default/fs/read?" + q, FamilyNamed, "", "", false},
			{"named write", "PUT", "/v1/sandboxes/default/fs/write?" + q, FamilyNamed, "new", "application/octet-stream", false},
			{"sprites read", "GET", "/v1/sprites/default/fs/read?" + q, FamilyNamed, "", "", false},
			{"v2 upload", "POST", "/v2/fs/upload", FamilyAIOv2, "", "", true},
			{"v1 upload", "POST", "/v1/file/upload", FamilyAIOv1, "", "", true},
			{"v2 copy", "POST", "/v2/fs/copy", FamilyAIOv2, js(`{"source":%q,"destination":"/copied"}`, p), "application/json", false},
			{"v1 copy", "POST", "/v1/file/copy", FamilyAIOv1, js(`{"source":%q,"destination":"/copied"}`, p), "application/json", false},
			{"named copy", "POST", "/v1/sandboxes/default/fs/copy", FamilyNamed, js(`{"source":%q,"dest":"/copied"}`, p), "application/json", false},
		}
	}
	for _, kind := range []string{"sock", "fifo", "fifo-open", "dev"} {
		p := "/" + kind
		for _, c := range routes(p) {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				before := specialNode(t, h, kind, p)
				hdr := map[string]string{}
				if c.ct != "" {
					hdr["Content-Type"] = c.ct
				}
				r := req{Method: c.method, Target: c.target, Header: hdr}
				if c.body != "" {
					r.Body = strings.NewReader(c.body)
				}
				if c.form {
					r.Body, hdr["Content-Type"] = multipartBody(t, [][2]string{{"path", p}}, "f", strings.NewReader("new"))
				}
				done := make(chan resp, 1)
				go func() { done <- h.do(t, r) }()
				var got resp
				select {
				case got = <-done:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s %s on %s: no answer in 10 s", c.method, c.target, p)
				}
				checkInvalidTarget(t, c.family, c.method, got)
				if after := describeNode(t, h, p); after != before {
					t.Errorf("node changed: %s, was %s", after, before)
				}
				if _, err := os.Lstat(h.host("/copied")); err == nil {
					t.Errorf("the copy made /copied")
				}
			})
		}
	}
	for _, kind := range []string{"sock", "fifo", "fifo-open", "dev"} {
		specialNode(t, h, kind, "/"+kind)
	}
	// grep over the root skips the special files (as rg does) and answers.
	for _, target := range []string{"/v2/fs/grep", "/v1/file/grep"} {
		got := h.do(t, req{Method: "POST", Target: target, Body: strings.NewReader(`{"path":"/","pattern":"a"}`),
			Header: map[string]string{"Content-Type": "application/json"}})
		wantStatus(t, got, http.StatusOK)
	}
}

// checkInvalidTarget wants 400 invalid_target in the family's shape (200
// success:false with error_type invalid_target on /v1/file).
func checkInvalidTarget(t *testing.T, family, method string, got resp) {
	t.Helper()
	want := http.StatusBadRequest
	if family == FamilyAIOv1 {
		want = http.StatusOK
	}
	if got.Status != want {
		t.Fatalf("status %d, want %d: %s", got.Status, want, got.Body)
	}
	if method == "HEAD" {
		return
	}
	if err := checkFamilyShape(family, got); err != nil {
		t.Fatalf("shape: %v: %s", err, got.Body)
	}
	switch family {
	case FamilyAIOv1, FamilyAIOv2:
		var env struct {
			Data aio.Failure `json:"data"`
		}
		json.Unmarshal(got.Body, &env)
		if env.Data.ErrorType != string(httpkit.KindInvalidTarget) {
			t.Errorf("error_type %q, want invalid_target: %s", env.Data.ErrorType, got.Body)
		}
	case FamilyNamed:
		var e named.ErrorBody
		json.Unmarshal(got.Body, &e)
		if e.Code != "EINVAL" {
			t.Errorf("code %q, want EINVAL: %s", e.Code, got.Body)
		}
	case FamilyAgent:
		wantProblem(t, got, http.StatusBadRequest, "invalid_request")
	}
}
