package fusefs

import (
	"sync"
	"sync/atomic"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"
)

// Held directory descriptors. With default_permissions the kernel refreshes
// a directory's attributes (GETATTR) after every change in it, since it
// needs the mode to check the next one: one GETATTR per create, unlink,
// mkdir or rename. Resolving the directory's path beneath the root for it
// costs an openat2, an fstat and a close; the loopback it is measured
// against does one lstat. So each directory node the kernel knows holds an
// O_PATH descriptor on its directory, opened by the lookup that made the
// node (the lookup opened it anyway) and closed when the kernel forgets the
// node, and answers GETATTR with one fstat, as libfuse's passthrough_ll
// does for every inode.
//
// The descriptor serves only GETATTR, and only where the mirror lets the
// kernel cache (cacheable: the kernel watch covers the path): there the
// journal already stands between an outside change and the kernel's view.
// It names the node's own inode, which is what GETATTR asks about (a
// directory replaced by an outside rename is a new inode, looked up anew).
// Once the journal tells that a directory was removed or renamed away, the
// mirror drops the descriptors of its subtree (forget in coherence.go), and
// when events were lost (a queue overflow) every descriptor, so a
// directory moved out of the root is asked by its path again, and is gone.
// Every change still resolves its path beneath the root fd: nothing is
// ever written through a held descriptor. Where the kernel may not cache
// (--mount-cache 0, .git, before the first walk) GETATTR resolves the
// path, as it always did. Files hold nothing: their attributes are cached
// for long and asked rarely.

// dirFdBudget bounds the descriptors held at once, a quarter of the
// daemon's limit (Go raises the soft limit to the hard one at start):
// beyond it a directory answers GETATTR by its path, as before.
var dirFdBudget = func() int64 {
	var rl unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_NOFILE, &rl) != nil {
		return 0
	}
	return int64(rl.Cur / 4)
}()

// dirFd is the descriptor a directory node holds (-1: none).
type dirFd struct {
	mu sync.Mutex
	fd int
}

// heldDirFds counts the descriptors held by every mirror in the process.
var heldDirFds atomic.Int64

// HeldDirs is how many directory descriptors the mirrors of this process
// hold (one per directory node the kernel knows, within the budget): open
// descriptors by design, which a leak check must not count.
func HeldDirs() int64 { return heldDirFds.Load() }

// keep takes fd for n if n is a directory node without one and the budget
// allows, else closes it.
func (n *node) keep(fd int) {
	if fd < 0 {
		return
	}
	n.dir.mu.Lock()
	defer n.dir.mu.Unlock()
	if !n.m.caching() {
		unix.Close(fd) // nothing is cached: nothing is asked of a held one
		return
	}
	if n.dir.fd >= 0 {
		unix.Close(fd) // found, not made: it holds one already
		return
	}
	if heldDirFds.Add(1) > dirFdBudget {
		heldDirFds.Add(-1)
		unix.Close(fd)
		return
	}
	n.dir.fd = fd
	n.m.heldMu.Lock()
	n.m.held[n] = struct{}{}
	n.m.heldMu.Unlock()
}

// release closes the held descriptor.
func (n *node) release() {
	n.dir.mu.Lock()
	defer n.dir.mu.Unlock()
	if n.dir.fd >= 0 {
		unix.Close(n.dir.fd)
		n.dir.fd = -1
		heldDirFds.Add(-1)
		n.m.heldMu.Lock()
		delete(n.m.held, n)
		n.m.heldMu.Unlock()
	}
}

// releaseTree closes the descriptors held under the inode in (itself
// included): it is no longer what its path names.
func releaseTree(in *fs.Inode) {
	if n, ok := in.Operations().(*node); ok {
		n.release()
	}
	for _, ch := range in.Children() {
		releaseTree(ch)
	}
}

// releaseAll closes every descriptor the mirror's nodes hold: at unmount
// (the kernel forgets nothing more), and when events were lost.
func (m *Mirror) releaseAll() {
	m.heldMu.Lock()
	nodes := make([]*node, 0, len(m.held))
	for n := range m.held {
		nodes = append(nodes, n)
	}
	m.heldMu.Unlock()
	for _, n := range nodes {
		n.release()
	}
}

// statHeld fstats the held descriptor; ok is false when there is none.
func (n *node) statHeld(p string) (st unix.Stat_t, ok bool, err error) {
	n.dir.mu.Lock()
	defer n.dir.mu.Unlock()
	if n.dir.fd < 0 {
		return st, false, nil
	}
	st, err = n.m.sb.FstatRaw(n.dir.fd, p)
	return st, true, err
}

var _ = (fs.NodeOnForgetter)((*node)(nil))

// OnForget: the kernel forgot the node.
func (n *node) OnForget() { n.release() }

// newNode is a node of m holding nothing yet.
func (m *Mirror) newNode() *node { return &node{m: m, dir: dirFd{fd: -1}} }
