package checkpoint

import (
	"path"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/internal/dirent"
	"sandfs/internal/xdev"
)

// A checkpoint's tree is mostly the tree of the checkpoint before it, and
// a made tree is never written again: a file an overlay would change is
// copied up first. So a build takes each file or symlink whose recorded
// attributes equal those of the same path in a tree made before as a hard
// link to that tree's inode (one call, as `cp -al` makes), and creates
// only the others (several calls each: create, size, xattrs, owner, mode,
// times). Equal records make equal inodes: the build sets exactly what
// the record says. A setuid or setgid file is always created: whether
// its bits were kept depends on the sandbox's options when it was made.

// madeTree is a tree made before, the source of a build's links: its
// directory (a descriptor of the build's) and its entries.
type madeTree struct {
	rootfd int
	files  map[string]cpEntry
}

// newestMade is the made tree (not id's) of the newest checkpoint the
// store still has, opened beneath lfd, or nil when there is none.
func (h *cpStore) newestMade(lfd int, id string) *madeTree {
	names, err := dirent.Names(lfd)
	if err != nil {
		return nil
	}
	best, seq := "", uint64(0)
	h.mu.Lock()
	for _, n := range names {
		if n == id || !validID(n) {
			continue // a build's temporary, the pins, or id itself
		}
		if hd, err := h.header(n); err == nil && (best == "" || hd.Seq > seq) {
			best, seq = n, hd.Seq
		}
	}
	h.mu.Unlock()
	if best == "" {
		return nil
	}
	files, err := h.treeFiles(best)
	if err != nil {
		return nil
	}
	fd, err := unix.Openat(lfd, best, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil // removed meanwhile: everything is created
	}
	return &madeTree{rootfd: fd, files: files}
}

func (m *madeTree) close() {
	if m != nil {
		unix.Close(m.rootfd)
	}
}

// sameInode reports whether an entry recorded as a would be made as the
// inode made for b.
func sameInode(a, b cpEntry) bool {
	return a.Kind == b.Kind && a.Kind != kindDir && a.Perm&(unix.S_ISUID|unix.S_ISGID) == 0 &&
		a.Perm == b.Perm && a.Uid == b.Uid && a.Gid == b.Gid && a.Mtime == b.Mtime &&
		a.Size == b.Size && a.Hash == b.Hash && a.Target == b.Target
}

// linkFrom makes p (name in dfd) a hard link to the same path of the tree
// made before when their records are equal; false when it did not (no
// such tree, path, or equal record, or the link failed): p is then made
// anew.
func (b *lowerBuild) linkFrom(p string, e cpEntry, dfd int, name string) bool {
	if b.from == nil {
		return false
	}
	old, ok := b.from.files[p]
	if !ok || !sameInode(e, old) {
		return false
	}
	ofd, err := b.fromParent(p)
	if err != nil {
		return false
	}
	return unix.Linkat(ofd, name, dfd, name, 0) == nil
}

// fromParent holds the directory of p in the tree made before, as parent
// does in the tree being built.
func (b *lowerBuild) fromParent(p string) (int, error) {
	dir := strings.TrimSuffix(path.Dir(p), "/")
	if dir == "/" || dir == "" {
		return b.from.rootfd, nil
	}
	if b.fromDirfd >= 0 && dir == b.fromDir {
		return b.fromDirfd, nil
	}
	b.closeFromDir()
	fd, err := xdev.OpenBelow(b.from.rootfd, dir[1:])
	if err != nil {
		return -1, err
	}
	b.fromDirfd, b.fromDir = fd, dir
	return fd, nil
}

func (b *lowerBuild) closeFromDir() {
	if b.fromDirfd >= 0 {
		unix.Close(b.fromDirfd)
		b.fromDirfd = -1
	}
}
