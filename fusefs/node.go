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

// node is one file of the mirror. Its API path is its place in the tree,
// and every operation resolves it under the root fd; a directory's node
// also holds a descriptor of its own for GETATTR alone (dirfd.go).
type node struct {
	fs.Inode
	m   *Mirror
	dir dirFd // a directory's own descriptor, for GETATTR (dirfd.go)
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
func (n *node) path() string { return "/" + n.Path(n.Root()) }

func (n *node) child(name string) string {
	p := n.path()
	if p == "/" {
		return "/" + name
	}
	return p + "/" + name
}

// actor stamps ctx with the calling process as the actor of a change.
func actor(ctx context.Context) (context.Context, core.Actor) {
	a := core.Actor{Origin: journal.FUSE}
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

func (m *Mirror) stableAttr(st *unix.Stat_t) fs.StableAttr {
	swapped := (uint64(st.Dev) << 32) | (uint64(st.Dev) >> 32)
	rootSwapped := (m.rootDev << 32) | (m.rootDev >> 32)
	return fs.StableAttr{Mode: st.Mode, Ino: (swapped ^ rootSwapped) ^ st.Ino, Gen: 1}
}

// newChild makes (or finds) the inode of name from its stat; dirfd (or -1)
// is a directory's descriptor for the node to hold.
func (n *node) newChild(ctx context.Context, st *unix.Stat_t, dirfd int, out *fuse.EntryOut) *fs.Inode {
	out.Attr.FromStat(sysStat(st))
	out.Attr.Ino = n.m.stableAttr(st).Ino
	ch := n.NewInode(ctx, n.m.newNode(), n.m.stableAttr(st))
	if cn, ok := ch.Operations().(*node); ok {
		cn.keep(dirfd)
	} else if dirfd >= 0 {
		unix.Close(dirfd)
	}
	return ch
}

func (n *node) lookupNew(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	p := n.child(name)
	st, dirfd, err := n.m.sb.LookupRaw(ctx, p, true)
	if err != nil {
		n.m.missing(p, out)
		return nil, n.m.toErrno(err)
	}
	n.m.entryTimeouts(p, out)
	return n.newChild(ctx, &st, dirfd, out), 0
}

func (n *node) Lookup(ctx context.Context, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	ch, errno := n.lookupNew(ctx, name, out)
	if errno == syscall.ENOENT && n.GetChild(name) != nil {
		// Gone behind our back (outside): keep the tree true, so the
		// inode's path is taken from a name it still has.
		n.RmChild(name)
	}
	return ch, errno
}

func (n *node) Getattr(ctx context.Context, f fs.FileHandle, out *fuse.AttrOut) syscall.Errno {
	p := n.path()
	cached := n.m.attrTimeout(p, out)
	if fh, ok := f.(*file); ok && fh != nil {
		return fh.Getattr(ctx, out)
	}
	// A held descriptor answers only where the journal keeps the kernel's
	// caches true: elsewhere the answer is what the path names now.
	var st unix.Stat_t
	var err error
	held := false
	if cached {
		st, held, err = n.statHeld(p)
	}
	if !held {
		st, err = n.m.sb.LstatRaw(ctx, p)
	}
	if err != nil {
		return n.m.toErrno(err)
	}
	out.FromStat(sysStat(&st))
	out.Ino = n.m.stableAttr(&st).Ino
	return 0
}

func (n *node) Setattr(ctx context.Context, f fs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
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
	fd := -1
	fh, _ := f.(*file)
	if fh != nil {
		fd = fh.fd()
	}
	if err := n.m.sb.Setattr(actx, n.path(), fd, a); err != nil {
		return n.m.toErrno(err)
	}
	if fh != nil {
		n.m.attrTimeout(n.path(), out)
		return fh.Getattr(ctx, out)
	}
	return n.Getattr(ctx, nil, out)
}

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	actx, a := actor(ctx)
	p := n.path()
	writing := flags&syscall.O_ACCMODE != syscall.O_RDONLY
	var claim *core.Claim
	if writing {
		claim = n.m.sb.Claim(p)
	}
	f, err := n.m.sb.OpenAt(actx, p, int(flags), 0)
	if err != nil {
		if claim != nil {
			claim.Done()
		}
		return nil, 0, n.m.toErrno(err)
	}
	fh := n.m.newFile(f, n.path, a, claim, nil)
	if writing && flags&syscall.O_TRUNC != 0 {
		fh.wrote = true
	}
	of := n.m.openFlags(p, false)
	if !writing {
		// Nothing to tell at close: the kernel skips FLUSH, one round trip
		// less for every read-only close. Locks are the kernel's own on
		// the mount's inodes (see Locks in the package doc): FLUSH plays no
		// part in them.
		of |= fuse.FOPEN_NOFLUSH
	}
	return fh, of, 0
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*fs.Inode, fs.FileHandle, uint32, syscall.Errno) {
	flags &^= syscall.O_APPEND | fuse.FMODE_EXEC
	actx, a := actor(ctx)
	p := n.child(name)
	uid, gid := owner(ctx)
	f, st, claim, err := n.m.sb.Create(actx, p, int(flags), mode, uid, gid)
	if err != nil {
		return nil, nil, 0, n.m.toErrno(err)
	}
	n.m.entryTimeouts(p, out)
	ch := n.newChild(ctx, &st, -1, out)
	pathOf := func() string { return p }
	if cn, ok := ch.Operations().(*node); ok {
		pathOf = cn.path
	}
	return ch, n.m.newFile(f, pathOf, a, claim, &st), n.m.openFlags(p, false), 0
}

func (n *node) made(ctx context.Context, name string, err error, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	if err != nil {
		return nil, n.m.toErrno(err)
	}
	return n.lookupNew(ctx, name, out)
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	actx, _ := actor(ctx)
	uid, gid := owner(ctx)
	return n.made(ctx, name, n.m.sb.Mknod(actx, n.child(name), mode, uint64(rdev), uid, gid), out)
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	actx, _ := actor(ctx)
	uid, gid := owner(ctx)
	return n.made(ctx, name, n.m.sb.MkdirAt(actx, n.child(name), mode, uid, gid), out)
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	actx, _ := actor(ctx)
	uid, gid := owner(ctx)
	return n.made(ctx, name, n.m.sb.Symlink(actx, target, n.child(name), uid, gid), out)
}

func (n *node) Link(ctx context.Context, target fs.InodeEmbedder, name string, out *fuse.EntryOut) (*fs.Inode, syscall.Errno) {
	actx, _ := actor(ctx)
	t, ok := target.(*node)
	if !ok {
		return nil, syscall.EXDEV
	}
	return n.made(ctx, name, n.m.sb.Link(actx, t.path(), n.child(name)), out)
}

func (n *node) Readlink(ctx context.Context) ([]byte, syscall.Errno) {
	t, err := n.m.sb.Readlink(ctx, n.path())
	if err != nil {
		return nil, n.m.toErrno(err)
	}
	return []byte(t), 0
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	actx, _ := actor(ctx)
	return n.m.toErrno(n.m.sb.Unlink(actx, n.child(name)))
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	actx, _ := actor(ctx)
	return n.m.toErrno(n.m.sb.Rmdir(actx, n.child(name)))
}

func (n *node) Rename(ctx context.Context, name string, newParent fs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	actx, _ := actor(ctx)
	np, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	return n.m.toErrno(n.m.sb.Rename(actx, n.child(name), np.child(newName), uint(flags)))
}

func (n *node) OpendirHandle(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	p := n.path()
	f, err := n.m.sb.OpenAt(ctx, p, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, 0, n.m.toErrno(err)
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		return nil, 0, n.m.toErrno(err)
	}
	ds, errno := fs.NewLoopbackDirStreamFd(fd)
	if errno != 0 {
		unix.Close(fd)
		return nil, 0, errno
	}
	return ds, n.m.openFlags(p, true), 0
}

func (n *node) Statfs(ctx context.Context, out *fuse.StatfsOut) syscall.Errno {
	var st unix.Statfs_t
	if err := n.m.sb.Statfs(&st); err != nil {
		return n.m.toErrno(err)
	}
	out.Blocks = st.Blocks
	out.Bfree = st.Bfree
	out.Bavail = st.Bavail
	out.Files = st.Files
	out.Ffree = st.Ffree
	out.Bsize = uint32(st.Bsize)
	out.NameLen = uint32(st.Namelen)
	out.Frsize = uint32(st.Frsize)
	return 0
}

func (n *node) Getxattr(ctx context.Context, attr string, dest []byte) (uint32, syscall.Errno) {
	sz, err := n.m.sb.Getxattr(ctx, n.path(), attr, dest)
	return uint32(sz), n.m.toErrno(err)
}

func (n *node) Listxattr(ctx context.Context, dest []byte) (uint32, syscall.Errno) {
	sz, err := n.m.sb.Listxattr(ctx, n.path(), dest)
	return uint32(sz), n.m.toErrno(err)
}

func (n *node) Setxattr(ctx context.Context, attr string, data []byte, flags uint32) syscall.Errno {
	actx, _ := actor(ctx)
	return n.m.toErrno(n.m.sb.Setxattr(actx, n.path(), attr, data, int(flags)))
}

func (n *node) Removexattr(ctx context.Context, attr string) syscall.Errno {
	actx, _ := actor(ctx)
	return n.m.toErrno(n.m.sb.Removexattr(actx, n.path(), attr))
}
