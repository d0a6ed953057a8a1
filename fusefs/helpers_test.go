package fusefs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/journal"
)

// The mirror's pure parts are tested without a mount: a fake sandbox
// answers what the mirror asks of core, and go-fuse's tree is built by
// fs.NewNodeFS with ServerCallbacks that record the notifies instead of
// sending them to a kernel.

const testRootDev = 0x803

// fakeSandbox covers the paths covers says, and holds the inodes lstat
// lists (any other path is ENOENT).
type fakeSandbox struct {
	covers func(p string) bool
	lstat  map[string]uint64 // API path → inode number, on the root's device
}

func (f *fakeSandbox) Name() string       { return "test" }
func (f *fakeSandbox) RootDir() *core.Dir { return nil }
func (f *fakeSandbox) NewDir(func() string, func() (int, error), bool) *core.Dir {
	return nil
}
func (f *fakeSandbox) Watch() core.WatchView { return fakeWatch{covers: f.covers} }

// fakeWatch covers what covers says; the mirror asks nothing else of it.
type fakeWatch struct {
	core.WatchView
	covers func(p string) bool
}

func (w fakeWatch) Covers(p string) bool { return w.covers != nil && w.covers(p) }
func (f *fakeSandbox) LstatRaw(_ context.Context, p string) (unix.Stat_t, error) {
	ino, ok := f.lstat[p]
	if !ok {
		return unix.Stat_t{}, unix.ENOENT
	}
	return unix.Stat_t{Dev: testRootDev, Ino: ino, Mode: unix.S_IFREG | 0o644}, nil
}
func (f *fakeSandbox) Journal() *journal.Journal { return nil }

// notifies records the notifies the mirror sends, as "content N" and
// "entry N name", N being the node's inode number (ExternalNodeID: node
// id = inode number; the root is 1).
type notifies struct {
	mu    sync.Mutex
	got   []string
	block chan struct{} // when set, each notify waits for a token first
}

func (r *notifies) add(format string, args ...any) fuse.Status {
	if r.block != nil {
		<-r.block
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, fmt.Sprintf(format, args...))
	return fuse.OK
}

func (r *notifies) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	got := r.got
	r.got = nil
	slices.Sort(got)
	return got
}

func (r *notifies) DeleteNotify(parent, child uint64, name string) fuse.Status {
	return r.add("delete %d %d %s", parent, child, name)
}
func (r *notifies) EntryNotify(parent uint64, name string) fuse.Status {
	return r.add("entry %d %s", parent, name)
}
func (r *notifies) InodeNotify(node uint64, off, length int64) fuse.Status {
	return r.add("content %d", node)
}
func (r *notifies) InodeRetrieveCache(uint64, int64, []byte) (int, fuse.Status) {
	return 0, fuse.ENOSYS
}
func (r *notifies) InodeNotifyStoreCache(uint64, int64, []byte) fuse.Status { return fuse.ENOSYS }

// testMirror is a mirror of sb with no mount: its root node is the root of
// a go-fuse tree whose notifies go to the returned recorder.
func testMirror(sb sandbox, entryTTL, attrTTL time.Duration) (*Mirror, *notifies) {
	m := &Mirror{sb: sb, log: slog.New(slog.NewTextHandler(io.Discard, nil)), rootDev: testRootDev,
		entryTTL: entryTTL, attrTTL: attrTTL}
	m.root = &node{m: m}
	rec := &notifies{}
	fs.NewNodeFS(m.root, &fs.Options{ServerCallbacks: rec, ExternalNodeID: true})
	return m, rec
}

// add puts a node for name with inode number ino under parent, as a
// lookup would have.
func (m *Mirror) add(parent *fs.Inode, name string, ino uint64, dir bool) *fs.Inode {
	mode := uint32(unix.S_IFREG)
	if dir {
		mode = unix.S_IFDIR
	}
	ch := parent.NewPersistentInode(context.Background(), &node{m: m}, fs.StableAttr{Mode: mode, Ino: ino})
	parent.AddChild(name, ch, true)
	return ch
}
