package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// Faults: the daemon killed mid-write, a full disk, the root taken
// away, the inotify watch limit, clients that go away. Figures and what the
// daemon does in each case are in RELIABILITY.md, "Faults".

// streamCase is a write whose body the test feeds by hand: start sends the
// request with body and feed writes a first part of it, never all.
type streamCase struct {
	name   string
	target string // the file that must keep its old content
	req    func(base string, body io.Reader) *http.Request
	feed   func(w io.Writer) error
}

var chunk = bytes.Repeat([]byte("new bytes that must never land "), 1<<15) // ~1 MiB

func streamCases() []streamCase {
	return []streamCase{
		{"sandbox-agent PUT /v1/fs/file", "f.txt",
			func(base string, body io.Reader) *http.Request {
				r, _ := http.NewRequest("PUT", base+"/v1/fs/file?path=/f.txt", body)
				return r
			},
			func(w io.Writer) error { _, err := w.Write(chunk); return err }},
		{"AIO v2 upload /v2/fs/upload", "f.txt",
			func(base string, body io.Reader) *http.Request {
				r, _ := http.NewRequest("POST", base+"/v2/fs/upload?path=/f.txt", body)
				r.Header.Set("Content-Type", "multipart/form-data; boundary=XXbound")
				return r
			},
			func(w io.Writer) error {
				mw := multipart.NewWriter(w)
				mw.SetBoundary("XXbound")
				part, err := mw.CreateFormFile("file", "f.txt")
				if err != nil {
					return err
				}
				_, err = part.Write(chunk)
				return err
			}},
		{"AIO v2 PUT /v2/fs/tree (tar)", "t/a",
			func(base string, body io.Reader) *http.Request {
				r, _ := http.NewRequest("PUT", base+"/v2/fs/tree?path=/t&mode=merge", body)
				r.Header.Set("Content-Type", "application/x-tar")
				return r
			},
			func(w io.Writer) error {
				tw := tar.NewWriter(w)
				if err := tw.WriteHeader(&tar.Header{Name: "b", Mode: 0o644, Size: 3, Typeflag: tar.TypeReg}); err != nil {
					return err
				}
				tw.Write([]byte("new"))
				if err := tw.WriteHeader(&tar.Header{Name: "a", Mode: 0o644, Size: 64 << 20, Typeflag: tar.TypeReg}); err != nil {
					return err
				}
				_, err := tw.Write(chunk)
				return err
			}},
	}
}

// seedOld writes the old content the targets must keep, and a user's files
// named like temps that the start-up sweep must leave alone.
func seedOld(t *testing.T, root string) {
	t.Helper()
	for p, c := range map[string]string{
		"f.txt": "old f", "t/a": "old a", "t/b": "old b",
		".sandfs-notes.part": "user's own", "t/x.part": "user's own",
	} {
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(root, p)), 0o755))
		must(t, os.WriteFile(filepath.Join(root, p), []byte(c), 0o644))
	}
}

func checkOld(t *testing.T, root string) {
	t.Helper()
	for p, c := range map[string]string{
		"f.txt": "old f", "t/a": "old a", "t/b": "old b",
		".sandfs-notes.part": "user's own", "t/x.part": "user's own",
	} {
		wantContent(t, filepath.Join(root, p), c)
	}
}

// TestFaultKillMidWrite: kill -9 while a PUT, an upload and a tar
// extraction stream their body: the targets keep their old content, the
// temp left behind is removed at the next start, a user's look-alikes stay.
func TestFaultKillMidWrite(t *testing.T) {
	for _, c := range streamCases() {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			seedOld(t, root)
			d := startDaemon(t, "--root", root)
			pr, pw := io.Pipe()
			done := make(chan error, 1)
			go func() {
				resp, err := http.DefaultClient.Do(c.req(d.URL, pr))
				if err == nil {
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					err = fmt.Errorf("answered %s: %s", resp.Status, b)
				}
				done <- err
			}()
			if err := c.feed(pw); err != nil {
				t.Fatal(err)
			}
			if !waitFor(20*time.Second, func() bool { return len(findTemps(root)) > 0 }) {
				t.Fatalf("no temp file appeared while the body streamed:\n%s", d.Log())
			}
			left := findTemps(root)
			must(t, d.cmd.Process.Kill())
			if _, exited := d.Wait(10 * time.Second); !exited {
				t.Fatal("daemon did not die on SIGKILL")
			}
			pw.CloseWithError(io.ErrClosedPipe)
			if err := <-done; err == nil || strings.Contains(err.Error(), "answered") {
				t.Errorf("the killed request: %v", err)
			}
			checkOld(t, root)
			if len(findTemps(root)) == 0 {
				t.Fatal("the kill left no temp behind: the case tests nothing")
			}
			d2 := startDaemon(t, "--root", root)
			if !waitFor(20*time.Second, func() bool { return len(findTemps(root)) == 0 }) {
				t.Fatalf("temps %q still there after the restart:\n%s", findTemps(root), d2.Log())
			}
			checkOld(t, root)
			if !waitFor(5*time.Second, func() bool { return strings.Contains(d2.Log(), "removed leftover temp files") }) {
				t.Errorf("the restart did not log the sweep:\n%s", d2.Log())
			}
			t.Logf("left by the kill: %q; removed at restart", left)
		})
	}
}

// TestFaultClientDisconnect: clients that go away mid-upload and
// mid-download leave no temp file, fd or goroutine behind.
func TestFaultClientDisconnect(t *testing.T) {
	d, dbg := startDebugDaemon(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<20) // 16 MiB
	must(t, os.WriteFile(filepath.Join(d.Root, "big"), big, 0o644))
	seedOld(t, d.Root)
	base := d.baseline(t, dbg)
	const rounds = 3
	for _, c := range streamCases() {
		for i := 0; i < rounds; i++ {
			ctx, cancel := context.WithCancel(context.Background())
			pr, pw := io.Pipe()
			done := make(chan struct{})
			go func() {
				defer close(done)
				resp, err := http.DefaultClient.Do(c.req(d.URL, pr).WithContext(ctx))
				if err == nil {
					resp.Body.Close()
					t.Errorf("%s: answered %s to a client that went away", c.name, resp.Status)
				}
			}()
			if err := c.feed(pw); err != nil {
				t.Fatal(err)
			}
			if !waitFor(20*time.Second, func() bool { return len(findTemps(d.Root)) > 0 }) {
				t.Fatalf("%s: no temp file appeared", c.name)
			}
			cancel() // the transport closes the connection mid-body
			pw.CloseWithError(context.Canceled)
			<-done
		}
	}
	for _, route := range []string{"/v1/fs/file?path=/big", "/v2/fs/download?path=/big", "/v1/file/download?path=/big", "/v1/sandboxes/default/fs/read?path=/big"} {
		for i := 0; i < rounds; i++ {
			resp, err := http.Get(d.URL + route)
			must(t, err)
			got := make([]byte, 64<<10)
			if _, err := io.ReadFull(resp.Body, got); err != nil || !bytes.Equal(got, big[:len(got)]) {
				t.Fatalf("GET %s: first 64 KiB wrong (%v)", route, err)
			}
			resp.Body.Close() // 16 MiB minus 64 KiB unread: the connection is dropped
		}
	}
	if !waitFor(20*time.Second, func() bool { return len(findTemps(d.Root)) == 0 }) {
		t.Errorf("temps left after the disconnects: %q", findTemps(d.Root))
	}
	checkOld(t, d.Root)
	after := d.settle(t, dbg, base, 2)
	t.Logf("before %v; after %d cut uploads and %d cut downloads: %v", base, 3*rounds, 4*rounds, after)
	if after.FDs > base.FDs+2 || after.Goroutines > base.Goroutines+2 {
		t.Errorf("leak: before %v, after %v", base, after)
	}
}

// requireRoot skips unless root, and fails instead under SANDFS_REQUIRE_FUSE=1
// (CI runs as root).
func requireRoot(t *testing.T, what string) {
	t.Helper()
	if os.Geteuid() == 0 {
		return
	}
	testenv.Skip(t, nil, "%s NOT RUN: needs root", what)
}

// aioErr is the part of an AIO envelope the fault tests read.
type aioErr struct {
	Success bool `json:"success"`
	Data    struct {
		ErrorType string `json:"error_type"`
		ErrnoName string `json:"errno_name"`
	} `json:"data"`
}

// TestFaultDiskFull: on a 1 MiB tmpfs root, a 2 MiB write in each family is
// 507 / no_space_left in the family's shape (AIO v1: 200, success:false),
// the old file is whole, no temp stays, and the space comes back.
func TestFaultDiskFull(t *testing.T) {
	requireRoot(t, "full-disk test (mounts a tmpfs)")
	root := t.TempDir()
	must(t, unix.Mount("tmpfs", root, "tmpfs", 0, "size=1m,mode=0755"))
	t.Cleanup(func() { unix.Unmount(root, unix.MNT_DETACH) })
	seedOld(t, root)
	d := startDaemon(t, "--root", root)
	free := func() uint64 {
		var st unix.Statfs_t
		must(t, unix.Statfs(root, &st))
		return st.Bfree
	}
	before := free()
	body := bytes.Repeat([]byte("x"), 2<<20)
	upload := func(route string) *http.Request {
		var b bytes.Buffer
		mw := multipart.NewWriter(&b)
		mw.WriteField("path", "/f.txt") // before "file", as the route wants
		fw, _ := mw.CreateFormFile("file", "f.txt")
		fw.Write(body)
		mw.Close()
		r, _ := http.NewRequest("POST", d.URL+route, &b)
		r.Header.Set("Content-Type", mw.FormDataContentType())
		return r
	}
	put := func(route string) *http.Request {
		r, _ := http.NewRequest("PUT", d.URL+route, bytes.NewReader(body))
		return r
	}
	jsonWrite := func(route, p string) *http.Request {
		b, _ := json.Marshal(map[string]string{"path": p, "file": p, "content": string(body[:1200<<10])})
		r, _ := http.NewRequest("POST", d.URL+route, bytes.NewReader(b))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	for _, c := range []struct {
		name   string
		req    *http.Request
		status int
		check  func(b []byte) error
		intact bool // the old file stays whole (false: the AIO in-place write)
	}{
		{"sandbox-agent PUT", put("/v1/fs/file?path=/f.txt"), 507, func(b []byte) error {
			var p struct{ Type string }
			if json.Unmarshal(b, &p) != nil || p.Type != "urn:sandbox-agent:error:stream_error" {
				return fmt.Errorf("want problem type stream_error")
			}
			return nil
		}, true},
		{"AIO v2 upload", upload("/v2/fs/upload"), 507, aioNoSpace(false), true},
		{"AIO v1 upload", upload("/v1/file/upload"), 200, aioNoSpace(false), true},
		{"named write", put("/v1/sandboxes/default/fs/write?path=/f.txt"), 507, func(b []byte) error {
			var e struct{ Code, Path string }
			if json.Unmarshal(b, &e) != nil || e.Code != "ENOSPC" || e.Path != "/f.txt" {
				return fmt.Errorf("want code ENOSPC, path /f.txt")
			}
			return nil
		}, true},
		{"AIO v2 tree (tar)", tarReq(d.URL+"/v2/fs/tree?path=/t", body), 507, aioNoSpace(false), true},
		{"sandbox-agent upload-batch (tar)", tarReq(d.URL+"/v1/fs/upload-batch?path=/t", body), 507, func(b []byte) error {
			var p struct{ Type string }
			if json.Unmarshal(b, &p) != nil || p.Type != "urn:sandbox-agent:error:stream_error" {
				return fmt.Errorf("want problem type stream_error")
			}
			return nil
		}, true},
		// The AIO plain write goes through the file itself by contract (no
		// temp, same inode): a full disk leaves what fitted, on its own file.
		{"AIO v2 write (in place)", jsonWrite("/v2/fs/write", "/inplace.txt"), 507, aioNoSpace(false), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := http.DefaultClient.Do(c.req)
			must(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.status {
				t.Fatalf("got %s, want %d: %s", resp.Status, c.status, b)
			}
			if err := c.check(b); err != nil {
				t.Errorf("%v: %s", err, b)
			}
			if c.intact {
				checkOld(t, root)
			} else {
				os.Remove(filepath.Join(root, "inplace.txt"))
			}
			if tmp := findTemps(root); len(tmp) > 0 {
				t.Errorf("temps left: %q", tmp)
			}
			if !waitFor(5*time.Second, func() bool { return free() >= before }) {
				t.Errorf("free blocks %d, %d before: space held by a leaked temp", free(), before)
			}
		})
	}
	resp, err := http.Get(d.URL + "/health")
	must(t, err)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("health after the full disk: %s", resp.Status)
	}
}

func aioNoSpace(success bool) func([]byte) error {
	return func(b []byte) error {
		var e aioErr
		if json.Unmarshal(b, &e) != nil || e.Success != success || e.Data.ErrorType != "no_space_left" || e.Data.ErrnoName != "ENOSPC" {
			return fmt.Errorf("want success:%v, error_type no_space_left, errno_name ENOSPC", success)
		}
		return nil
	}
}

func tarReq(u string, content []byte) *http.Request {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	tw.WriteHeader(&tar.Header{Name: "a", Mode: 0o644, Size: int64(len(content)), Typeflag: tar.TypeReg})
	tw.Write(content)
	tw.Close()
	r, _ := http.NewRequest(map[bool]string{true: "PUT", false: "POST"}[strings.Contains(u, "/v2/")], u, &b)
	r.Header.Set("Content-Type", "application/x-tar")
	return r
}

// familyCalls are a read, a list and a write in each family, for the tests
// that take the root away: each must answer, never with a 5xx.
func familyCalls(base string) []*http.Request {
	get := func(u string) *http.Request { r, _ := http.NewRequest("GET", base+u, nil); return r }
	post := func(u, body string) *http.Request {
		r, _ := http.NewRequest("POST", base+u, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		return r
	}
	put := func(u, body string) *http.Request {
		r, _ := http.NewRequest("PUT", base+u, strings.NewReader(body))
		return r
	}
	return []*http.Request{
		get("/v1/fs/file?path=/f.txt"), get("/v1/fs/entries?path=/"), put("/v1/fs/file?path=/new.txt", "n"),
		get("/v2/fs/read?path=/f.txt"), get("/v2/fs/list?path=/"), post("/v2/fs/write", `{"path":"/new2.txt","content":"n"}`),
		post("/v1/file/read", `{"file":"/f.txt"}`), post("/v1/file/list", `{"path":"/"}`), post("/v1/file/write", `{"file":"/new3.txt","content":"n"}`),
		get("/v1/sandboxes/default/fs/read?path=/f.txt"), get("/v1/sandboxes/default/fs/list?path=/"), put("/v1/sandboxes/default/fs/write?path=/new4.txt", "n"),
		get("/health"),
	}
}

// TestFaultRootGone: the root removed, or renamed away and replaced, under a
// running daemon. The daemon serves by an fd on the directory it opened: a
// renamed-away root keeps being served at its new place (the replacement is
// not seen until a restart); a removed root answers not-found for every
// path and refuses new files (ENOENT, 404 / 200 success:false), never a 5xx
// or a crash; a restart serves the new directory.
func TestFaultRootGone(t *testing.T) {
	for _, how := range []string{"removed", "replaced"} {
		t.Run(how, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "root")
			seedOld(t, root)
			d := startDaemon(t, "--root", root)
			switch how {
			case "removed":
				must(t, os.RemoveAll(root))
			case "replaced":
				must(t, os.Rename(root, filepath.Join(base, "moved")))
				must(t, os.MkdirAll(root, 0o755))
				must(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("replacement"), 0o644))
			}
			var seen []string
			for _, r := range familyCalls(d.URL) {
				resp, err := http.DefaultClient.Do(r)
				if err != nil {
					t.Fatalf("%s %s: %v\n%s", r.Method, r.URL, err, d.Log())
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				seen = append(seen, fmt.Sprintf("%s %s → %d", r.Method, r.URL.RequestURI(), resp.StatusCode))
				if resp.StatusCode >= 500 {
					t.Errorf("%s %s: %s: %s", r.Method, r.URL, resp.Status, b)
				}
				isWrite := r.Method == "PUT" || strings.HasSuffix(r.URL.Path, "/write")
				isRead := strings.Contains(r.URL.RawQuery, "f.txt") || bytes.Contains(bodyOf(r), []byte("f.txt"))
				switch {
				case how == "removed" && isWrite && resp.StatusCode == 200 && !bytes.Contains(b, []byte(`"success":false`)):
					t.Errorf("%s %s wrote into a removed root: %s", r.Method, r.URL, b)
				case how == "replaced" && isRead && !bytes.Contains(b, []byte("old f")):
					t.Errorf("%s %s: %d %s; want the old root's file (served by fd)", r.Method, r.URL, resp.StatusCode, b)
				}
			}
			t.Logf("root %s:\n%s", how, strings.Join(seen, "\n"))
			want := map[string]string{"removed": "removed", "replaced": "moved"}[how]
			var h struct {
				Status string            `json:"status"`
				Roots  map[string]string `json:"roots"`
			}
			resp, err := http.Get(d.URL + "/health")
			must(t, err)
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
			if resp.StatusCode != 200 || h.Status != "ok" || h.Roots["default"] != want {
				t.Errorf("/health: %s %+v, want roots.default %q", resp.Status, h, want)
			}
			if !waitFor(10*time.Second, func() bool { return strings.Contains(d.Log(), "the sandbox root was removed or moved away") }) {
				t.Errorf("the daemon did not log the root's loss:\n%s", d.Log())
			}
			if _, exited := d.Wait(0); exited {
				t.Fatalf("daemon exited:\n%s", d.Log())
			}
			if how == "replaced" {
				wantContent(t, filepath.Join(base, "moved", "new.txt"), "n") // the write landed in the directory served
				wantContent(t, filepath.Join(root, "f.txt"), "replacement")
			}
			d.Stop(t)
			d2 := startDaemon(t, "--root", root)
			resp, err = http.Get(d2.URL + "/v1/fs/entries?path=/")
			must(t, err)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("after a restart: %s", resp.Status)
			}
		})
	}
}

// TestFaultInotifyLimit: the daemon runs in its own user namespace whose
// inotify watch limit is 8, over a tree of 30 directories. The API serves
// as usual, /health and the watcher list say the watch is degraded, and a
// watcher over a directory that could not be watched reports overflow.
func TestFaultInotifyLimit(t *testing.T) {
	requireRoot(t, "inotify limit test (user namespace)")
	if out, err := exec.Command("unshare", "--user", "--map-root-user", "true").CombinedOutput(); err != nil {
		testenv.Skip(t, nil, "INOTIFY LIMIT TEST NOT RUN: cannot make a user namespace (unshare --user): %v %s", err, out)
	}
	wrapper := filepath.Join(t.TempDir(), "limited-sandfs")
	must(t, os.WriteFile(wrapper, []byte(`#!/bin/sh
exec unshare --user --map-root-user sh -c 'echo 8 > /proc/sys/user/max_inotify_watches && exec "$0" "$@"' `+sandfsBin(t)+` "$@"
`), 0o755))
	root := t.TempDir()
	for i := 0; i < 30; i++ {
		must(t, os.MkdirAll(filepath.Join(root, fmt.Sprintf("d%02d", i)), 0o755))
	}
	d := startDaemonWith(t, daemonOptions{Bin: wrapper}, "--root", root)
	var h struct {
		Status   string   `json:"status"`
		Watch    string   `json:"watch"`
		Degraded []string `json:"degraded"`
	}
	if !waitFor(20*time.Second, func() bool {
		resp, err := http.Get(d.URL + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		return json.NewDecoder(resp.Body).Decode(&h) == nil && h.Watch == "degraded"
	}) {
		t.Fatalf("/health never said degraded: %+v\n%s", h, d.Log())
	}
	if h.Status != "ok" || len(h.Degraded) != 1 || h.Degraded[0] != "default" {
		t.Errorf("/health = %+v", h)
	}
	if !strings.Contains(d.Log(), "inotify watch limit reached") {
		t.Errorf("no log line about the limit:\n%s", d.Log())
	}
	w := newWatch(t, d)
	resp, err := http.Get(d.URL + "/v2/watch")
	must(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"status":"degraded"`) {
		t.Errorf("watcher list: %s", b)
	}
	// A new directory made outside cannot be watched: its watchers lose.
	must(t, os.MkdirAll(filepath.Join(root, "late", "sub"), 0o755))
	overflow := waitFor(20*time.Second, func() bool {
		var out struct {
			Data struct {
				Cursor   uint64 `json:"cursor"`
				Overflow bool   `json:"overflow"`
			} `json:"data"`
		}
		resp, err := http.Get(fmt.Sprintf("%s/v2/watch/%s/poll?cursor=%d&timeout=1", d.URL, w.id, w.cursor))
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		if json.NewDecoder(resp.Body).Decode(&out) != nil {
			return false
		}
		w.cursor = out.Data.Cursor
		return out.Data.Overflow
	})
	if !overflow {
		t.Errorf("the watcher never reported overflow for an unwatchable directory")
	}
	// The API keeps serving, and its own changes are still told.
	restPut(t, d, "/d29/api.txt", "api")
	if got := restGet(t, d, "/d29/api.txt"); got != "api" {
		t.Errorf("read back %q", got)
	}
	w.until(t, "/d29/api.txt", "api")
	for _, r := range familyCalls(d.URL) {
		resp, err := http.DefaultClient.Do(r)
		must(t, err)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			t.Errorf("%s %s: %s", r.Method, r.URL, resp.Status)
		}
	}
}

// bodyOf is the body a familyCalls request sends.
func bodyOf(r *http.Request) []byte {
	if r.GetBody == nil {
		return nil
	}
	rc, err := r.GetBody()
	if err != nil {
		return nil
	}
	b, _ := io.ReadAll(rc)
	return b
}
