package fusefs

import (
	"strings"
	"syscall"

	"github.com/hanwen/go-fuse/v2/fs"
	"golang.org/x/sys/unix"

	"sandfs/core"
)

// The tree of nodes is go-fuse's: each node the kernel knows has a name in
// a parent node, and go-fuse follows the mirror's renames. A directory's
// node has its core.Dir, which opens the directory from its parent's Dir by
// that one name (openSelf) and keeps the descriptor where the journal hears
// outside changes (core/dir.go). Any other node is reached through its
// parent's Dir and its name (at). So every request works on a descriptor
// found from the root down, name by name, and a node the mirror dropped
// from the tree (told removed or moved away) reaches nothing.

// newNode is a node of m for a file of mode mode (a directory gets its Dir).
func (m *Mirror) newNode(mode uint32) *node {
	n := &node{m: m}
	if mode&unix.S_IFMT == unix.S_IFDIR {
		n.dir = m.sb.NewDir(n.path, n.openSelf, m.caching())
	}
	return n
}

// openSelf opens a directory node's directory by its name in its parent's
// Dir, and checks it is still the inode the node stands for: a name that
// now holds another directory is not this node's.
func (n *node) openSelf() (int, error) {
	name, p := n.Parent()
	if p == nil {
		return -1, unix.ENOENT // dropped from the tree
	}
	pn, ok := p.Operations().(*node)
	if !ok || pn.dir == nil {
		return -1, unix.ENOENT
	}
	fd, st, err := pn.dir.OpenDir(name)
	if err != nil {
		return -1, err
	}
	if n.m.stableAttr(&st).Ino != n.StableAttr().Ino {
		unix.Close(fd)
		return -1, unix.ENOENT
	}
	return fd, nil
}

// at is the Dir a request on n's own inode goes through, and n's name in
// it: a directory's own Dir and "", else its parent's Dir and its name.
func (n *node) at() (*core.Dir, string, syscall.Errno) {
	if n.dir != nil {
		return n.dir, "", 0
	}
	name, p := n.Parent()
	if p == nil {
		return nil, "", syscall.ENOENT // unlinked: only an open handle reaches it
	}
	pn, ok := p.Operations().(*node)
	if !ok || pn.dir == nil {
		return nil, "", syscall.ENOENT
	}
	return pn.dir, name, 0
}

// releaseTree lets go of the descriptors held under the inode in (itself
// included): it is no longer what its path names.
func releaseTree(in *fs.Inode) {
	if n, ok := in.Operations().(*node); ok && n.dir != nil {
		n.dir.Release()
	}
	for _, ch := range in.Children() {
		releaseTree(ch)
	}
}

var _ = (fs.NodeOnForgetter)((*node)(nil))

// OnForget: the kernel forgot the node.
func (n *node) OnForget() {
	if n.dir != nil {
		n.dir.Release()
	}
}

// HeldDirs is how many directory descriptors the mirrors of this process
// hold (one per directory in use where the journal hears outside changes,
// within a budget): open descriptors by design, which a leak check must
// not count.
func HeldDirs() int64 { return core.HeldDirs() }

// pathTo is the API path of name in n ("" for n itself). An orphaned node
// (its name, or a directory above it, gone from the tree) is named as
// go-fuse's Inode.Path names it, under ".go-fuse.N/deleted".
func (n *node) pathTo(name string) string {
	if p, ok := n.walk(name); ok {
		return p
	}
	p := "/" + n.Path(n.Root())
	if name != "" {
		p += "/" + name
	}
	return p
}

// walk is the API path of name in n ("" for n itself), found by going up
// the tree one parent at a time, and false once a node on the way has no
// parent. Every request names its node at least once (a core.Dir's path,
// a coverage check), so it is built in one allocation: go-fuse's
// Inode.Path grows a slice of the names, joins them, and the "/" in front
// cost a third copy.
func (n *node) walk(name string) (string, bool) {
	root := n.Root()
	var buf [24]string
	segs := buf[:0]
	size := 0
	if name != "" {
		segs = append(segs, name)
		size += 1 + len(name)
	}
	for p := &n.Inode; p != root; {
		seg, parent := p.Parent()
		if parent == nil {
			return "", false
		}
		segs = append(segs, seg)
		size += 1 + len(seg)
		p = parent
	}
	if len(segs) == 0 {
		return "/", true
	}
	var b strings.Builder
	b.Grow(size)
	for i := len(segs) - 1; i >= 0; i-- {
		b.WriteByte('/')
		b.WriteString(segs[i])
	}
	return b.String(), true
}
