package integration

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

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
