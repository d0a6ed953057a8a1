package fusefs

import (
	"context"
	"os"
	"syscall"
	"unsafe"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/journal"
)

// node is one file of the mirror: an inode the kernel knows, named in the
// tree (tree.go). A directory's node has its core.Dir; every request is
// one call of the syscall it names on a Dir, with the one name the kernel
// gave.
type node struct {
	fs.Inode
	m   *Mirror
	dir *core.Dir // a directory's own (tree.go); nil for any other file
}

var (
	_ = (fs.NodeLookuper)((*node)(nil))
	_ = (fs.NodeGetattrer)((*node)(nil))
	_ = (fs.NodeSetattrer)((*node)(nil))
	_ = (fs.NodeOpener)((*node)(nil))
	_ = (fs.NodeCreater)((*node)(nil))
	_ = (fs.NodeMknoder)((*node)(nil))
	_ = (fs.NodeMkdirer)((*node)(nil))
	_ = (fs.NodeSymlinker)((*node)(nil))
	_ = (fs.NodeLinker)((*node)(nil))
	_ = (fs.NodeReadlinker)((*node)(nil))
	_ = (fs.NodeUnlinker)((*node)(nil))
	_ = (fs.NodeRmdirer)((*node)(nil))
	_ = (fs.NodeRenamer)((*node)(nil))
	_ = (fs.NodeOpendirHandler)((*node)(nil))
	_ = (fs.NodeStatfser)((*node)(nil))
	_ = (fs.NodeGetxattrer)((*node)(nil))
	_ = (fs.NodeSetxattrer)((*node)(nil))
	_ = (fs.NodeListxattrer)((*node)(nil))
	_ = (fs.NodeRemovexattrer)((*node)(nil))
)

// path is the node's API path.
func (n *node) path() string { return n.pathTo("") }

// namedPath is the node's API path for what an open file tells (Handle's
// events), "" once the node is orphaned: its name, or a directory above
// it, is gone from the tree (removed, or moved out of the root). go-fuse
// names such a node ".go-fuse.N/deleted/…", a name no event may carry;
// core tells nothing of a path "".
func (n *node) namedPath() string {
	p, ok := n.walk("")
	if !ok {
		return ""
	}
	return p
}

func (n *node) childPath(name string) string { return n.pathTo(name) }

// actor stamps ctx with the calling process as the actor of a change: its
// pid and uid now, its command name and cgroup (proc.go) when core tells a
// change, so that a request that changes nothing does not read /proc.
func actor(ctx context.Context) (context.Context, core.Actor) {
	a := core.Actor{Origin: journal.Mirror, Process: process}
	if c, ok := fuse.FromContext(ctx); ok {
		a.Pid, a.Uid = c.Pid, c.Uid
	}
	return core.WithActor(ctx, a), a
}

// asRoot: the daemon runs as root, and may give what it makes to the caller.
var asRoot = os.Geteuid() == 0

// owner is the uid and gid new files get: the caller's when we may chown.
func owner(ctx context.Context) (int, int) {
	if !asRoot {
		return -1, -1
	}
	if c, ok := fuse.FromContext(ctx); ok {
		return int(c.Uid), int(c.Gid)
	}
	return -1, -1
}

// sysStat views x/sys's Stat_t as the syscall package's: on Linux the two
// have the same layout, field for field.
func sysStat(st *unix.Stat_t) *syscall.Stat_t { return (*syscall.Stat_t)(unsafe.Pointer(st)) }

// sysStatfs is sysStat for Statfs_t.
func sysStatfs(st *unix.Statfs_t) *syscall.Statfs_t { return (*syscall.Statfs_t)(unsafe.Pointer(st)) }

func (m *Mirror) stableAttr(st *unix.Stat_t) fs.StableAttr {
	swapped := (uint64(st.Dev) << 32) | (uint64(st.Dev) >> 32)
	rootSwapped := (m.rootDev << 32) | (m.rootDev >> 32)
	return fs.StableAttr{Mode: st.Mode, Ino: (swapped ^ rootSwapped) ^ st.Ino, Gen: 1}
}

// newChild makes (or finds) the inode of a child from its stat.
func (n *node) newChild(ctx context.Context, st *unix.Stat_t, out *fuse.EntryOut) *fs.Inode {
	out.Attr.FromStat(sysStat(st))
	out.Attr.Ino = n.m.stableAttr(st).Ino
	return n.NewInode(ctx, n.m.newNode(st.Mode), n.m.stableAttr(st))
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.m.count(opLookup)
	p := n.childPath(name)
	st, err := n.dir.Lookup(ctx, name)
	old := n.GetChild(name)
	if err != nil {
		n.m.vetoNegativeEntry(p, out)
		errno := n.m.toErrno(err)
		if errno == syscall.ENOENT && old != nil {
			// Gone behind our back (outside): keep the tree true, so the
			// inode's path is taken from a name it still has, and let go
			// of what it held: it may be outside the root now.
			releaseTree(old)
			n.RmChild(name)
		}
		return nil, errno
	}
	if old != nil && old.StableAttr().Ino != n.m.stableAttr(&st).Ino {
		releaseTree(old) // replaced behind our back: the old one may have left the root
	}
	ch := n.newChild(ctx, &st, out)
	n.m.entryTimeouts(p, out) // after the attributes: a set-id file's are not kept
	return ch, 0
}

// entry answers a request that made name in n with stat st.
func (n *node) answerEntry(ctx context.Context, name string, st *unix.Stat_t, err error, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err != nil {
		return nil, n.m.toErrno(err)
	}
	ch := n.newChild(ctx, st, out)
	n.m.entryTimeouts(n.childPath(name), out)
	return ch, 0
}

// answerAttr answers a request on n's attributes with stat st.
func (n *node) answerAttr(st *unix.Stat_t, err error, out *fuse.AttrOut) syscall.Errno {
	if err != nil {
		return n.m.toErrno(err)
	}
	out.FromStat(sysStat(st))
	out.Ino = n.m.stableAttr(st).Ino
	n.m.attrTimeout(n.path(), out)
	return 0
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	n.m.count(opGetattr)
	if fh, ok := f.(*file); ok && fh != nil {
		errno := fh.Getattr(ctx, out)
		n.m.attrTimeout(n.path(), out)
		return errno
	}
	d, name, errno := n.at()
	if errno != 0 {
		return errno
	}
	st, err := d.Getattr(name)
	return n.answerAttr(&st, err, out)
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	n.m.count(opSetattr)
	actx, _ := actor(ctx)
	var a core.SetAttr
	if m, ok := in.GetMode(); ok {
		a.Mode = &m
	}
	if uid, ok := in.GetUID(); ok {
		u := int(uid)
		a.Uid = &u
	}
	if gid, ok := in.GetGID(); ok {
		g := int(gid)
		a.Gid = &g
	}
	if sz, ok := in.GetSize(); ok {
		s := int64(sz)
		a.Size = &s
	}
	if in.Valid&fuse.FATTR_ATIME != 0 {
		ts := unix.Timespec{Sec: int64(in.Atime), Nsec: int64(in.Atimensec)}
		if in.Valid&fuse.FATTR_ATIME_NOW != 0 {
			ts = unix.Timespec{Nsec: unix.UTIME_NOW}
		}
		a.Atime = &ts
	}
	if in.Valid&fuse.FATTR_MTIME != 0 {
		ts := unix.Timespec{Sec: int64(in.Mtime), Nsec: int64(in.Mtimensec)}
		if in.Valid&fuse.FATTR_MTIME_NOW != 0 {
			ts = unix.Timespec{Nsec: unix.UTIME_NOW}
		}
		a.Mtime = &ts
	}
	var st unix.Stat_t
	var err error
	if fh, _ := f.(*file); fh != nil {
		st, err = fh.h.Setattr(actx, a) // works for an unlinked file, and for ftruncate
	} else {
		d, name, errno := n.at()
		if errno != 0 {
			return errno
		}
		st, err = d.Setattr(actx, name, a)
	}
	return n.answerAttr(&st, err, out)
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.m.count(opOpen)
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	actx, _ := actor(ctx)
	d, name, errno := n.at()
	if errno != 0 {
		return nil, 0, errno
	}
	h, err := d.Open(actx, name, int(flags))
	if err != nil {
		return nil, 0, n.m.toErrno(err)
	}
	h.Follow(n.namedPath)
	of := n.m.openFlags(n.path(), false)
	if flags&syscall.O_ACCMODE == syscall.O_RDONLY {
		// Nothing to tell at close: the kernel skips FLUSH, one round trip
		// less for every read-only close. Locks are the kernel's own on
		// the mount's inodes (see Locks in the package doc): FLUSH plays no
		// part in them.
		of |= fuse.FOPEN_NOFLUSH
	}
	return n.m.newFile(h), of, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	n.m.count(opCreate)
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	actx, _ := actor(ctx)
	p := n.childPath(name)
	uid, gid := owner(ctx)
	h, st, err := n.dir.Create(actx, name, int(flags), mode, uid, gid)
	if err != nil {
		return nil, nil, 0, n.m.toErrno(err)
	}
	ch := n.newChild(ctx, &st, out)
	n.m.entryTimeouts(p, out)
	if cn, ok := ch.Operations().(*node); ok {
		h.Follow(cn.namedPath)
	}
	return ch, n.m.newFile(h), n.m.openFlags(p, false), 0
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.m.count(opMknod)
	actx, _ := actor(ctx)
	uid, gid := owner(ctx)
	st, err := n.dir.Mknod(actx, name, mode, uint64(rdev), uid, gid)
	return n.answerEntry(ctx, name, &st, err, out)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.m.count(opMkdir)
	actx, _ := actor(ctx)
	uid, gid := owner(ctx)
	st, err := n.dir.Mkdir(actx, name, mode, uid, gid)
	return n.answerEntry(ctx, name, &st, err, out)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.m.count(opSymlink)
	actx, _ := actor(ctx)
	uid, gid := owner(ctx)
	st, err := n.dir.Symlink(actx, target, name, uid, gid)
	return n.answerEntry(ctx, name, &st, err, out)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	n.m.count(opLink)
	actx, _ := actor(ctx)
	t, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	td, tname, errno := t.at()
	if errno != 0 {
		return nil, errno
	}
	if tname == "" {
		return nil, syscall.EPERM // a directory: link(2) says EPERM
	}
	st, err := n.dir.Link(actx, td, tname, name)
	return n.answerEntry(ctx, name, &st, err, out)
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	n.m.count(opReadlink)
	d, name, errno := n.at()
	if errno != 0 {
		return nil, errno
	}
	t, err := d.Readlink(name)
	if err != nil {
		return nil, n.m.toErrno(err)
	}
	return []byte(t), 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	n.m.count(opUnlink)
	actx, _ := actor(ctx)
	return n.m.toErrno(n.dir.Unlink(actx, name))
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	n.m.count(opRmdir)
	actx, _ := actor(ctx)
	return n.m.toErrno(n.dir.Rmdir(actx, name))
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	n.m.count(opRename)
	actx, _ := actor(ctx)
	np, ok := newParent.(*node)
	if !ok || np.dir == nil {
		return syscall.EXDEV
	}
	return n.m.toErrno(n.dir.Rename(actx, name, np.dir, newName, uint(flags)))
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	n.m.count(opOpendir)
	if n.dir == nil {
		return nil, 0, syscall.ENOTDIR
	}
	fd, err := n.dir.Opendir(ctx)
	if err != nil {
		return nil, 0, n.m.toErrno(err)
	}
	ds, errno := fs.NewLoopbackDirStreamFd(fd)
	if errno != 0 {
		unix.Close(fd)
		return nil, 0, errno
	}
	return ds, n.m.openFlags(n.path(), true), 0
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	n.m.count(opStatfs)
	var st unix.Statfs_t
	if err := n.m.fs.Statfs(&st); err != nil {
		return n.m.toErrno(err)
	}
	out.FromStatfsT(sysStatfs(&st))
	return 0
}

func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	n.m.count(opGetxattr)
	d, name, errno := n.at()
	if errno != 0 {
		return 0, errno
	}
	sz, err := d.Getxattr(name, attr, dest)
	return uint32(sz), n.m.toErrno(err)
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	n.m.count(opListxattr)
	d, name, errno := n.at()
	if errno != 0 {
		return 0, errno
	}
	sz, err := d.Listxattr(name, dest)
	return uint32(sz), n.m.toErrno(err)
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	n.m.count(opSetxattr)
	actx, _ := actor(ctx)
	d, name, errno := n.at()
	if errno != 0 {
		return errno
	}
	return n.m.toErrno(d.Setxattr(actx, name, attr, data, int(flags)))
}

func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	n.m.count(opRemovexattr)
	actx, _ := actor(ctx)
	d, name, errno := n.at()
	if errno != 0 {
		return errno
	}
	return n.m.toErrno(d.Removexattr(actx, name, attr))
}
