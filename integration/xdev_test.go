package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// spyRoot is the root of a FUSE filesystem this test process serves (the
// daemon under test is another process, so nothing here opens a file on
// its own mount): a directory holding secret.txt, which records every
// request a thread of the process pid sends it.
type spyRoot struct {
	fs.Inode
	pid  int
	mu   sync.Mutex
	seen []string
}

func (r *spyRoot) note(ctx context.Context, op string) {
	c, ok := fuse.FromContext(ctx)
	if !ok {
		return
	}
	// The kernel gives the caller's thread id: one of the daemon's threads?
	if _, err := os.Stat(fmt.Sprintf("/proc/%d/task/%d", r.pid, c.Pid)); err != nil {
		return
	}
	r.mu.Lock()
	r.seen = append(r.seen, op)
	r.mu.Unlock()
}

func (r *spyRoot) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func (r *spyRoot) OnAdd(ctx context.Context) {
	f := &fs.MemRegularFile{Data: []byte("foreign-secret\n"), Attr: fuse.Attr{Mode: 0o644}}
	r.AddChild("secret.txt", r.NewPersistentInode(ctx, f, fs.StableAttr{}), false)
}

func (r *spyRoot) Getattr(ctx context.Context, _ fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	r.note(ctx, "getattr")
	out.Mode = fuse.S_IFDIR | 0o755
	return 0
}

func (r *spyRoot) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	r.note(ctx, "lookup "+name)
	if ch := r.GetChild(name); ch != nil {
		return ch, 0
	}
	return nil, syscall.ENOENT
}

func (r *spyRoot) Opendir(ctx context.Context) syscall.Errno {
	r.note(ctx, "opendir")
	return 0
}

func (r *spyRoot) Readdir(ctx context.Context) (fs.DirStream, syscall.Errno) {
	r.note(ctx, "readdir")
	return fs.NewListDirStream([]fuse.DirEntry{{Name: "secret.txt", Mode: fuse.S_IFREG}}), 0
}

func (r *spyRoot) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	r.note(ctx, "statfs")
	return 0
}

var (
	_ fs.NodeGetattrer = (*spyRoot)(nil)
	_ fs.NodeLookuper  = (*spyRoot)(nil)
	_ fs.NodeOpendirer = (*spyRoot)(nil)
	_ fs.NodeReaddirer = (*spyRoot)(nil)
	_ fs.NodeStatfser  = (*spyRoot)(nil)
	_ fs.NodeOnAdder   = (*spyRoot)(nil)
)

// TestWalksStayOnTheRoot: a FUSE mount that someone else made inside a
// served root (its server might never answer) is never entered by the
// daemon's own walks: the watch's at start, a recursive listing, grep, a
// tar of the tree, a checkpoint. Not one request reaches its server from
// the daemon, nothing of it is in an answer, and the mount point is listed
// as a directory.
func TestWalksStayOnTheRoot(t *testing.T) {
	requireFUSE(t)
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "mine.txt"), []byte("own-secret\n"), 0o644))
	inner := filepath.Join(root, "inner")
	must(t, os.Mkdir(inner, 0o755))
	spy := &spyRoot{pid: -1}
	srv, err := fs.Mount(inner, spy, &fs.Options{MountOptions: fuse.MountOptions{FsName: "spy", Name: "spy"}})
	if err != nil {
		t.Fatalf("mount the foreign filesystem: %v", err)
	}
	t.Cleanup(func() { srv.Unmount() })
	spy.mu.Lock()
	spy.pid = os.Getpid() // the daemon is not started yet: nothing to see
	spy.mu.Unlock()
	d := startDaemon(t, "--root", root)
	spy.mu.Lock()
	spy.pid = d.cmd.Process.Pid
	spy.seen = nil
	spy.mu.Unlock()

	for _, c := range []struct {
		name, method, path, body string
		want                     string // in the answer
	}{
		{"recursive list", "GET", "/v2/fs/list?path=/&recursive=true", "", `"name":"inner"`},
		{"named list", "GET", "/v1/sandboxes/default/fs/list?path=/", "", `"name":"inner"`},
		{"grep", "POST", "/v2/fs/grep", `{"path":"/","pattern":"secret"}`, "own-secret"},
		{"find", "GET", "/v2/fs/search?path=/&pattern=**/*.txt", "", "mine.txt"},
		{"tar", "GET", "/v2/fs/tree?path=/", "", "own-secret"},
		{"checkpoint", "POST", "/v1/sandboxes/default/checkpoints", "", `"files":1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			req, _ := http.NewRequest(c.method, d.URL+c.path, strings.NewReader(c.body))
			if c.body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			resp, err := d.Client().Do(req)
			must(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			if !strings.Contains(string(b), c.want) {
				t.Errorf("the answer lacks %s: %.600s", c.want, b)
			}
			if strings.Contains(string(b), "foreign-secret") || strings.Contains(string(b), "inner/secret.txt") {
				t.Errorf("the answer has the foreign mount's content: %.600s", b)
			}
			if got := spy.requests(); len(got) > 0 {
				sort.Strings(got)
				t.Errorf("the daemon sent the foreign mount's server %d requests: %q", len(got), got)
			}
		})
	}
}
