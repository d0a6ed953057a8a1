package rest

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/api"
	"sandfs/internal/testenv"
	"sandfs/rest/named"
)

func TestNamedRoutes(t *testing.T) {
	for _, pre := range namedPrefixes {
		t.Run(strings.Trim(pre, "/"), func(t *testing.T) {
			h := newNamedHarness(t)
			d := pre + "default/fs/"
			me := os.Getuid()

			type tc struct {
				name  string
				setup func(t *testing.T)
				req   req
				check func(t *testing.T, r resp)
			}
			cases := []tc{
				{"write with mode and mkdir", nil,
					req{Method: "PUT", Target: d + "write?path=root/run.sh&workingDir=/&mode=0755&mkdir=true", Body: strings.NewReader("#!/bin/sh\n")},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						got := decode[named.WriteResponse](t, r)
						if got != (named.WriteResponse{Path: "/root/run.sh", Size: 10, Mode: "0755"}) {
							t.Errorf("got %+v", got)
						}
						h.wantFile(t, "/root/run.sh", "#!/bin/sh\n")
						if st, _ := os.Stat(h.host("/root/run.sh")); st.Mode().Perm() != 0o755 {
							t.Errorf("mode on disk: %v", st.Mode())
						}
					}},
				{"write replaces, keeps mode, workingDir", func(t *testing.T) { h.writeFile(t, "/w/a.txt", "old") },
					req{Method: "PUT", Target: d + "write?path=a.txt&workingDir=/w&mkdirParents=true", Body: strings.NewReader("new!")},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						got := decode[named.WriteResponse](t, r)
						if got.Path != "/w/a.txt" || got.Size != 4 {
							t.Errorf("got %+v", got)
						}
						h.wantFile(t, "/w/a.txt", "new!")
						wantNoTemp(t, h.host("/w"))
					}},
				{"write missing parents", nil,
					req{Method: "PUT", Target: d + "write?path=/nope/deeper/a.txt", Body: strings.NewReader("x")},
					func(t *testing.T, r resp) {
						wantNamedError(t, r, 404, "ENOENT", "/nope/deeper/a.txt")
						h.wantAbsent(t, "/nope")
					}},
				{"write makes its immediate parent (the SDK's mkdir)", nil,
					req{Method: "PUT", Target: d + "write?path=/mk/.keep", Body: strings.NewReader("")},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						if got := decode[named.WriteResponse](t, r); got != (named.WriteResponse{Path: "/mk/.keep", Size: 0, Mode: "0644"}) {
							t.Errorf("got %+v", got)
						}
						h.wantDir(t, "/mk")
						h.wantFile(t, "/mk/.keep", "")
					}},
				{"write too large", nil,
					req{Method: "PUT", Target: d + "write?path=/big", Body: bytes.NewReader(make([]byte, named.MaxWrite+1))},
					func(t *testing.T, r resp) {
						wantNamedError(t, r, 413, "EFBIG", "")
						h.wantAbsent(t, "/big")
					}},
				{"write bad mode", nil,
					req{Method: "PUT", Target: d + "write?path=/m&mode=9z", Body: strings.NewReader("x")},
					func(t *testing.T, r resp) { wantNamedError(t, r, 400, "EINVAL", ""); h.wantAbsent(t, "/m") }},
				{"relative workingDir", nil,
					req{Method: "GET", Target: d + "stat?path=a&workingDir=rel"},
					func(t *testing.T, r resp) { wantNamedError(t, r, 400, "EINVAL", "") }},
				{"read", func(t *testing.T) { h.writeFile(t, "/r.txt", "hello world") },
					req{Method: "GET", Target: d + "read?path=r.txt&asRoot=true"},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						if string(r.Body) != "hello world" || r.Header.Get("Content-Type") != "application/octet-stream" {
							t.Errorf("got %q %q", r.Body, r.Header.Get("Content-Type"))
						}
					}},
				{"read range", func(t *testing.T) { h.writeFile(t, "/r2.txt", "hello world") },
					req{Method: "GET", Target: d + "read?path=/r2.txt", Header: map[string]string{"Range": "bytes=6-"}},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 206)
						if string(r.Body) != "world" {
							t.Errorf("got %q", r.Body)
						}
					}},
				{"read missing", nil, req{Method: "GET", Target: d + "read?path=/root/nope"},
					func(t *testing.T, r resp) { wantNamedError(t, r, 404, "ENOENT", "/root/nope") }},
				{"read directory", func(t *testing.T) { h.mkdir(t, "/rd") }, req{Method: "GET", Target: d + "read?path=/rd"},
					func(t *testing.T, r resp) { wantNamedError(t, r, 400, "EISDIR", "/rd") }},
				{"list", func(t *testing.T) {
					h.writeFile(t, "/l/b.txt", "bb")
					h.writeFile(t, "/l/a.py", "a")
					h.mkdir(t, "/l/sub")
					h.writeFile(t, "/l/sub/c.py", "ccc")
					h.symlink(t, "b.txt", "/l/ln")
				}, req{Method: "GET", Target: d + "list?path=/l"},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						got := decode[api.List](t, r)
						if got.Path != "/l" || got.Count != 4 || len(got.Entries) != 4 {
							t.Fatalf("got %+v", got)
						}
						want := []struct{ name, typ, mode string }{{"a.py", "file", "0644"}, {"b.txt", "file", "0644"}, {"ln", "symlink", "0777"}, {"sub", "directory", "0755"}}
						for i, w := range want {
							e := got.Entries[i]
							if e.Name != w.name || e.Type != w.typ || e.Path != "/l/"+w.name || e.IsDir != (w.typ == "directory") {
								t.Errorf("entry %d: got %+v, want %v", i, e, w)
							}
							if w.typ != "symlink" && e.Mode != w.mode {
								t.Errorf("entry %d mode: got %s, want %s", i, e.Mode, w.mode)
							}
							if _, err := time.Parse(time.RFC3339, e.ModTime); err != nil {
								t.Errorf("modTime %q: %v", e.ModTime, err)
							}
						}
						if got.Entries[1].Size != 2 {
							t.Errorf("b.txt size: %d", got.Entries[1].Size)
						}
					}},
				{"list recursive pattern", func(t *testing.T) {
					h.writeFile(t, "/lr/a.py", "a")
					h.writeFile(t, "/lr/x.txt", "a")
					h.writeFile(t, "/lr/sub/c.py", "ccc")
				}, req{Method: "GET", Target: d + "list?path=/lr&recursive=true&pattern=*.py"},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						got := decode[api.List](t, r)
						var paths []string
						for _, e := range got.Entries {
							paths = append(paths, e.Path)
						}
						if strings.Join(paths, ",") != "/lr/a.py,/lr/sub/c.py" || got.Count != 2 {
							t.Errorf("got %v (count %d)", paths, got.Count)
						}
					}},
				{"list a file as itself", func(t *testing.T) { h.writeFile(t, "/lf.txt", "abc") },
					req{Method: "GET", Target: d + "list?path=/lf.txt"},
					func(t *testing.T, r resp) {
						got := decode[api.List](t, r)
						if got.Count != 1 || got.Entries[0].Path != "/lf.txt" || got.Entries[0].Size != 3 || got.Entries[0].Type != "file" {
							t.Errorf("got %+v", got)
						}
					}},
				{"list missing", nil, req{Method: "GET", Target: d + "list?path=/ln-none"},
					func(t *testing.T, r resp) { wantNamedError(t, r, 404, "ENOENT", "/ln-none") }},
				{"stat directory", func(t *testing.T) { h.mkdir(t, "/sd") }, req{Method: "GET", Target: d + "stat?path=/sd"},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						got := decode[api.Entry](t, r)
						if got.Name != "sd" || got.Path != "/sd" || got.Type != "directory" || !got.IsDir || got.Mode != "0755" {
							t.Errorf("got %+v", got)
						}
					}},
				{"stat missing", nil, req{Method: "GET", Target: d + "stat?path=/nope"},
					func(t *testing.T, r resp) { wantNamedError(t, r, 404, "ENOENT", "/nope") }},
				{"delete query", func(t *testing.T) { h.writeFile(t, "/del.txt", "x") },
					req{Method: "DELETE", Target: d + "delete?path=/del.txt"},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						got := decode[named.DeleteResponse](t, r)
						if len(got.Deleted) != 1 || got.Deleted[0] != "/del.txt" || got.Count != 1 {
							t.Errorf("got %+v", got)
						}
						h.wantAbsent(t, "/del.txt")
					}},
				{"delete non-empty without recursive", func(t *testing.T) { h.writeFile(t, "/dd/a", "x") },
					req{Method: "DELETE", Target: d + "delete?path=/dd"},
					func(t *testing.T, r resp) { wantNamedError(t, r, 409, "ENOTEMPTY", "/dd"); h.wantFile(t, "/dd/a", "x") }},
				{"delete body recursive", func(t *testing.T) { h.writeFile(t, "/db/x/a", "x") },
					req{Method: "DELETE", Target: d + "delete", Body: namedBody(map[string]any{"path": "x", "workingDir": "/db", "recursive": true})},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						if got := decode[named.DeleteResponse](t, r); got.Deleted[0] != "/db/x" {
							t.Errorf("got %+v", got)
						}
						h.wantAbsent(t, "/db/x")
					}},
				{"delete missing", nil, req{Method: "DELETE", Target: d + "delete?path=/gone"},
					func(t *testing.T, r resp) { wantNamedError(t, r, 404, "ENOENT", "/gone") }},
				{"rename", func(t *testing.T) { h.writeFile(t, "/mv/a", "aa") },
					req{Method: "POST", Target: d + "rename", Body: namedBody(map[string]any{"source": "a", "dest": "b", "workingDir": "/mv"})},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						if got := decode[named.MoveResponse](t, r); got != (named.MoveResponse{Source: "/mv/a", Dest: "/mv/b"}) {
							t.Errorf("got %+v", got)
						}
						h.wantAbsent(t, "/mv/a")
						h.wantFile(t, "/mv/b", "aa")
					}},
				{"rename missing", nil,
					req{Method: "POST", Target: d + "rename", Body: namedBody(map[string]any{"source": "/nope", "dest": "/b"})},
					func(t *testing.T, r resp) { wantNamedError(t, r, 404, "ENOENT", "/nope") }},
				{"rename missing dest field", nil,
					req{Method: "POST", Target: d + "rename", Body: namedBody(map[string]any{"source": "/nope"})},
					func(t *testing.T, r resp) { wantNamedError(t, r, 400, "EINVAL", "") }},
				{"copy directory needs recursive", func(t *testing.T) { h.writeFile(t, "/cd/a", "x") },
					req{Method: "POST", Target: d + "copy", Body: namedBody(map[string]any{"source": "/cd", "dest": "/cd2"})},
					func(t *testing.T, r resp) { wantNamedError(t, r, 400, "EISDIR", "/cd"); h.wantAbsent(t, "/cd2") }},
				{"copy recursive", func(t *testing.T) { h.writeFile(t, "/cr/a", "xyz"); h.writeFile(t, "/cr/s/b", "12") },
					req{Method: "POST", Target: d + "copy", Body: namedBody(map[string]any{"source": "/cr", "dest": "/cr2", "recursive": true})},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						got := decode[named.CopyResponse](t, r)
						if got != (named.CopyResponse{Source: "/cr", Dest: "/cr2", Count: 4, TotalBytes: 5}) {
							t.Errorf("got %+v", got)
						}
						h.wantFile(t, "/cr2/a", "xyz")
						h.wantFile(t, "/cr2/s/b", "12")
					}},
				{"copy preserveAttrs", func(t *testing.T) {
					h.writeFile(t, "/cp/a", "abc")
					os.Chmod(h.host("/cp/a"), 0o640)
					old := time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)
					os.Chtimes(h.host("/cp/a"), old, old)
					unix.Setxattr(h.host("/cp/a"), "user.tag", []byte("v1"), 0)
				}, req{Method: "POST", Target: d + "copy", Body: namedBody(map[string]any{"source": "/cp/a", "dest": "/cp/b", "preserveAttrs": true})},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						got := decode[named.CopyResponse](t, r)
						if got.Count != 1 || got.TotalBytes != 3 {
							t.Errorf("got %+v", got)
						}
						st, err := os.Stat(h.host("/cp/b"))
						if err != nil {
							t.Fatal(err)
						}
						if st.Mode().Perm() != 0o640 || !st.ModTime().Equal(time.Date(2020, 1, 2, 3, 4, 5, 0, time.UTC)) {
							t.Errorf("mode %v mtime %v", st.Mode(), st.ModTime())
						}
						buf := make([]byte, 16)
						if n, err := unix.Getxattr(h.host("/cp/a"), "user.tag", buf); err == nil && n > 0 {
							n, err := unix.Getxattr(h.host("/cp/b"), "user.tag", buf)
							if err != nil || string(buf[:n]) != "v1" {
								t.Errorf("xattr user.tag on the copy: %q, %v", buf[:max(n, 0)], err)
							}
						}
					}},
				{"chmod recursive", func(t *testing.T) { h.writeFile(t, "/cm/a", "x"); h.writeFile(t, "/cm/s/b", "y") },
					req{Method: "POST", Target: d + "chmod", Body: namedBody(map[string]any{"path": "/cm", "mode": "0700", "recursive": true})},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						if got := decode[named.ChmodResponse](t, r); got != (named.ChmodResponse{Path: "/cm", Mode: "0700", Count: 4}) {
							t.Errorf("got %+v", got)
						}
						for _, p := range []string{"/cm", "/cm/a", "/cm/s", "/cm/s/b"} {
							if st, _ := os.Stat(h.host(p)); st.Mode().Perm() != 0o700 {
								t.Errorf("%s: mode %v", p, st.Mode())
							}
						}
					}},
				{"chmod bad mode", func(t *testing.T) { h.writeFile(t, "/cmb", "x") },
					req{Method: "POST", Target: d + "chmod", Body: namedBody(map[string]any{"path": "/cmb", "mode": "rwx"})},
					func(t *testing.T, r resp) { wantNamedError(t, r, 400, "EINVAL", "") }},
				{"chmod missing", nil,
					req{Method: "POST", Target: d + "chmod", Body: namedBody(map[string]any{"path": "/cmn", "mode": "0644"})},
					func(t *testing.T, r resp) { wantNamedError(t, r, 404, "ENOENT", "/cmn") }},
				{"chown numeric, recursive", func(t *testing.T) { h.writeFile(t, "/co/a", "x") },
					req{Method: "POST", Target: d + "chown", Body: namedBody(map[string]any{"path": "/co", "uid": me, "gid": strconv.Itoa(os.Getgid()), "recursive": true})},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						got := decode[named.ChownResponse](t, r)
						if got.Path != "/co" || got.Count != 2 || strings.Join(got.Affected, ",") != "/co,/co/a" {
							t.Errorf("got %+v", got)
						}
					}},
				{"chown by name", func(t *testing.T) { h.writeFile(t, "/con", "x") },
					req{Method: "POST", Target: d + "chown", Body: namedBody(map[string]any{"path": "/con", "uid": currentUserName(t)})},
					func(t *testing.T, r resp) {
						wantStatus(t, r, 200)
						if got := decode[named.ChownResponse](t, r); got.Count != 1 {
							t.Errorf("got %+v", got)
						}
					}},
				{"chown unknown name", func(t *testing.T) { h.writeFile(t, "/cou", "x") },
					req{Method: "POST", Target: d + "chown", Body: namedBody(map[string]any{"path": "/cou", "uid": "no-such-user-sandfs"})},
					func(t *testing.T, r resp) { wantNamedError(t, r, 400, "EINVAL", "") }},
				{"chown neither", func(t *testing.T) { h.writeFile(t, "/con2", "x") },
					req{Method: "POST", Target: d + "chown", Body: namedBody(map[string]any{"path": "/con2"})},
					func(t *testing.T, r resp) { wantNamedError(t, r, 400, "EINVAL", "") }},
				{"unknown sandbox", nil, req{Method: "GET", Target: pre + "nope/fs/stat?path=/"},
					func(t *testing.T, r resp) { wantNamedError(t, r, 404, "ENOENT", "nope") }},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					if c.setup != nil {
						c.setup(t)
					}
					c.check(t, h.do(t, c.req))
				})
			}
		})
	}
}

func currentUserName(t *testing.T) string {
	u, err := user.Current()
	if err != nil {
		testenv.Skip(t, nil, "no current user: %v", err)
	}
	return u.Username
}

// TestNamedIsolation: a path in one sandbox never reaches the other, and
// events stay in their own journal.
func TestNamedIsolation(t *testing.T) {
	h := newNamedHarness(t)
	seqDef, seqOther := h.def.Journal().Seq(), h.ob.Journal().Seq()
	r := h.do(t, req{Method: "PUT", Target: "/v1/sandboxes/other/fs/write?path=/only-other.txt", Body: strings.NewReader("o")})
	wantStatus(t, r, 200)
	if _, err := os.Stat(filepath.Join(h.other, "only-other.txt")); err != nil {
		t.Errorf("not written in other: %v", err)
	}
	h.wantAbsent(t, "/only-other.txt")
	r = h.do(t, req{Method: "GET", Target: "/v1/sprites/default/fs/read?path=/only-other.txt"})
	wantNamedError(t, r, 404, "ENOENT", "/only-other.txt")
	r = h.do(t, req{Method: "GET", Target: "/v1/sandboxes/other/fs/read?path=/../../only-other.txt"})
	wantStatus(t, r, 200)
	if h.def.Journal().Seq() != seqDef {
		t.Errorf("default's journal moved on a write to other")
	}
	if h.ob.Journal().Seq() == seqOther {
		t.Errorf("other's journal did not move")
	}
	if _, err := os.Stat(filepath.Join(h.other, "only-other.txt")); errors.Is(err, fs.ErrNotExist) {
		t.Error("gone")
	}
	_ = context.Background
	_ = http.StatusOK
}

// TestNamedLinkTarget: a symlink's listing and stat carry its target as
// stored (dangling too); files and directories carry none.
func TestNamedLinkTarget(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	fixture(t, h)
	r := h.do(t, req{Method: "GET", Target: "/v1/sandboxes/default/fs/list?path=/"})
	wantStatus(t, r, 200)
	got := map[string]string{}
	for _, e := range decode[api.List](t, r).Entries {
		got[e.Name] = e.Type + ":" + e.Target
	}
	want := map[string]string{"a.txt": "file:", "sub": "directory:", "link": "symlink:a.txt", "dirlink": "symlink:sub", "dangling": "symlink:nowhere"}
	if !maps.Equal(got, want) {
		t.Errorf("list: got %v, want %v", got, want)
	}
	r = h.do(t, req{Method: "GET", Target: "/v1/sandboxes/default/fs/stat?path=/dangling"})
	wantStatus(t, r, 200)
	if e := decode[api.Entry](t, r); e.Target != "nowhere" || e.Type != "symlink" {
		t.Errorf("stat: %+v", e)
	}
}
