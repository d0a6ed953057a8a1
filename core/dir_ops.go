package core

import (
	"bytes"
	"context"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/internal/safeat"
)

// The syscalls of a Dir (dir.go), one *at call each on the Dir's
// descriptor with the one name the kernel gave; name "" is the Dir itself,
// for the calls the kernel makes on a directory's own inode (getattr,
// setattr, the xattr calls). A final symlink is never followed. Each
// change claims its API path in the ledger and appends one event made by
// the actor in ctx, describing the file by the descriptor or the stat the
// call already has (no path is resolved again to tell it). The caller's
// uid and gid, where given (>= 0), become the owner of what is made.

// Op names of the mirror's operations.
const (
	OpCreate   = "create"
	OpMknod    = "mknod"
	OpSymlink  = "symlink"
	OpLink     = "link"
	OpXattr    = "xattr"
	OpReadlink = "readlink"
)

// Lookup is the lstat of the one name name in d, which the kernel asks
// before it knows the name.
func (d *Dir) Lookup(ctx context.Context, name string) (unix.Stat_t, error) {
	if name == "" {
		return unix.Stat_t{}, PathErr(OpStat, d.path(), unix.EINVAL) // Getattr checks any other name
	}
	return d.Getattr(name)
}

// Getattr is the lstat of name in d ("" for d itself: one fstat of its
// descriptor).
func (d *Dir) Getattr(name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	dirfd, done, err := d.at()
	if err != nil {
		return st, PathErr(OpStat, d.child(name), err)
	}
	defer done(dirfd)
	if name == "" {
		err = unix.Fstat(dirfd, &st)
	} else if err = oneName(name); err == nil {
		err = unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	}
	if err != nil {
		return st, PathErr(OpStat, d.child(name), err)
	}
	return st, nil
}

// Opendir opens d itself for reading its entries.
func (d *Dir) Opendir(ctx context.Context) (int, error) {
	dirfd, done, err := d.at()
	if err != nil {
		return -1, PathErr(OpOpen, d.path(), err)
	}
	defer done(dirfd)
	fd, err := unix.Openat(dirfd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, PathErr(OpOpen, d.path(), err)
	}
	return fd, nil
}

// Open opens the existing file name in d with open(2) flags (O_CREAT is
// refused with EINVAL: use Create). A handle open for writing holds a claim
// on the file until it is released, so the echoes of its writes are told
// once, by the handle (handle.go).
func (d *Dir) Open(ctx context.Context, name string, flags int) (*Handle, error) {
	ap := d.child(name)
	if err := oneName(name); err != nil {
		return nil, PathErr(OpOpen, ap, err)
	}
	if flags&unix.O_CREAT != 0 {
		return nil, PathErr(OpOpen, ap, unix.EINVAL)
	}
	dirfd, done, err := d.at()
	if err != nil {
		return nil, PathErr(OpOpen, ap, err)
	}
	defer done(dirfd)
	var claim *Claim
	if flags&unix.O_ACCMODE != unix.O_RDONLY {
		claim = d.s.watch.ClaimFile(ap, "")
	}
	trunc := claim != nil && flags&unix.O_TRUNC != 0
	if trunc {
		flags &^= unix.O_TRUNC // truncated below, its bytes counted (core/quota)
	}
	fd, err := unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		if claim != nil {
			claim.Done()
		}
		return nil, PathErr(OpOpen, ap, err)
	}
	h := d.s.newHandle(ctx, fd, ap, claim, nil)
	if trunc {
		h.wrote = true
		if err := h.truncateOpened(ap); err != nil {
			h.Release(ctx)
			h.f.Close()
			return nil, PathErr(OpOpen, ap, err)
		}
	}
	return h, nil
}

// Create creates (or, without O_EXCL, opens) the regular file name in d with
// the given flags and mode (the caller's umask already applied, kept
// exactly: modes.go), owned by uid and gid where >= 0, and returns its
// handle and stat. A new file is told as create. The handle holds the claim
// on the file until it is released, so the echoes of its writes are
// claimed by the same claim as the create's.
func (d *Dir) Create(ctx context.Context, name string, flags int, mode uint32, uid, gid int) (*Handle, unix.Stat_t, error) {
	var st unix.Stat_t
	ap := d.child(name)
	if err := oneName(name); err != nil {
		return nil, st, PathErr(OpCreate, ap, err)
	}
	ctx, dirfd, done, err := d.changeAt(ctx)
	if err != nil {
		return nil, st, PathErr(OpCreate, ap, err)
	}
	defer done(dirfd)
	claim := d.s.watch.ClaimFile(ap, journal.Create)
	op := d.s.quota.Begin()
	fd, err := -1, error(nil)
	if qerr := op.Reserve(OpCreate, ap, 0, 1); qerr != nil {
		err = unix.EEXIST // no room for a new name: open the file if it is there
		if flags&unix.O_EXCL != 0 || !exists(dirfd, name) {
			op.End(0, 0)
			claim.Done()
			return nil, st, refusedUnlessExists(dirfd, name, OpCreate, ap, qerr)
		}
	} else {
		fd, err = unix.Openat(dirfd, name, flags|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	}
	created := err == nil
	trunc := false
	if err == unix.EEXIST && flags&unix.O_EXCL == 0 {
		trunc = flags&unix.O_TRUNC != 0
		fd, err = unix.Openat(dirfd, name, (flags&^(unix.O_CREAT|unix.O_TRUNC))|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	}
	if created {
		op.End(0, 1)
	} else {
		op.End(0, 0)
	}
	if err != nil {
		claim.Done()
		return nil, st, PathErr(OpCreate, ap, err)
	}
	// The owner and mode fixes claim their own echoes: the open file's
	// claim covers no chmod (watch.Claim.covers).
	var fix *Claim
	if !created {
		claim.NoEcho()
	} else if uid, gid, _, ok := callerOwner(dirfd, uid, gid); ok {
		claim.NoEcho() // the chown's echo comes after the create's
		fix = d.s.watch.Claim(ap)
		unix.Fchown(fd, uid, gid)
	}
	serr := unix.Fstat(fd, &st)
	if created && serr == nil && st.Mode&0o7777 != mode&0o7777 {
		// The daemon's umask cut bits the caller kept, or the chown
		// cleared setuid/setgid (modes.go).
		claim.NoEcho()
		if fix == nil {
			fix = d.s.watch.Claim(ap)
		}
		if safeat.Chmod(fd, mode&0o7777) == nil {
			serr = unix.Fstat(fd, &st)
		}
	}
	if fix != nil {
		fix.Done()
	}
	if created {
		if serr != nil {
			d.s.tellStat(ctx, journal.Create, ap, "", false, nil)
		} else {
			d.s.tellStat(ctx, journal.Create, ap, "", false, &st)
		}
	}
	if serr != nil {
		unix.Close(fd)
		claim.Done()
		return nil, st, PathErr(OpCreate, ap, serr)
	}
	h := d.s.newHandle(ctx, fd, ap, claim, &st)
	if trunc {
		h.wrote = true
		if err := h.truncateOpened(ap); err != nil {
			h.Release(ctx)
			h.f.Close()
			return nil, st, PathErr(OpCreate, ap, err)
		}
		unix.Fstat(fd, &st)
	}
	return h, st, nil
}

// Mknod makes a node (FIFO, socket, device, or regular file) name in d and
// returns its stat.
func (d *Dir) Mknod(ctx context.Context, name string, mode uint32, dev uint64, uid, gid int) (unix.Stat_t, error) {
	return d.make(ctx, OpMknod, name, uid, gid, mode, false, func(dirfd int) error {
		return unix.Mknodat(dirfd, name, mode, int(dev))
	})
}

// Mkdir makes the directory name in d with exactly mode (umask already
// applied) and returns its stat.
func (d *Dir) Mkdir(ctx context.Context, name string, mode uint32, uid, gid int) (unix.Stat_t, error) {
	return d.make(ctx, OpMkdir, name, uid, gid, mode, true, func(dirfd int) error {
		return unix.Mkdirat(dirfd, name, mode)
	})
}

// Symlink makes a symlink name in d pointing at target (stored as given)
// and returns its stat.
func (d *Dir) Symlink(ctx context.Context, target, name string, uid, gid int) (unix.Stat_t, error) {
	return d.make(ctx, OpSymlink, name, uid, gid, 0, false, func(dirfd int) error {
		return unix.Symlinkat(target, dirfd, name)
	})
}

// make runs mk (which makes name in the descriptor it is given) under a
// claim, gives what it made to the caller and its exact mode, tells it as
// create, and returns its stat.
func (d *Dir) make(ctx context.Context, op, name string, uid, gid int, mode uint32, isDir bool, mk func(dirfd int) error) (unix.Stat_t, error) {
	var st unix.Stat_t
	ap := d.child(name)
	if err := oneName(name); err != nil {
		return st, PathErr(op, ap, unix.EEXIST)
	}
	ctx, dirfd, done, err := d.changeAt(ctx)
	if err != nil {
		return st, PathErr(op, ap, err)
	}
	defer done(dirfd)
	claim := d.s.watch.Claim(ap)
	defer claim.Done()
	uop := d.s.quota.Begin()
	if err := reserveEntry(&uop, dirfd, name, op, ap); err != nil {
		return st, err
	}
	if err := mk(dirfd); err != nil {
		uop.End(0, 0)
		return st, PathErr(op, ap, err)
	}
	uop.End(0, 1)
	owner := daemonUid
	if uid, gid, _, ok := callerOwner(dirfd, uid, gid); ok && safeat.LchownAt(dirfd, name, uid, gid) == nil && uid >= 0 {
		owner = uid
	}
	exactMode(dirfd, name, mode, isDir, owner)
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		d.s.tellStat(ctx, journal.Create, ap, "", isDir, nil)
		return st, PathErr(op, ap, err)
	}
	d.s.tellStat(ctx, journal.Create, ap, "", isDir, &st)
	return st, nil
}

// Readlink reads the symlink name in d.
func (d *Dir) Readlink(name string) (string, error) {
	ap := d.child(name)
	if err := oneName(name); err != nil {
		return "", PathErr(OpReadlink, ap, err)
	}
	dirfd, done, err := d.at()
	if err != nil {
		return "", PathErr(OpReadlink, ap, err)
	}
	defer done(dirfd)
	t, err := Readlinkat(dirfd, name)
	if err != nil {
		return "", PathErr(OpReadlink, ap, err)
	}
	return t, nil
}

// Setattr changes the attributes of name in d ("" for d itself) and
// returns its stat after. A size change is told as write, anything else as
// chmod. (Through an open handle: Handle.Setattr.)
func (d *Dir) Setattr(ctx context.Context, name string, a SetAttr) (unix.Stat_t, error) {
	ap := d.child(name)
	ctx, fd, done, err := d.changeTarget(ctx, name)
	if err != nil {
		return unix.Stat_t{}, PathErr(OpSetattr, ap, err)
	}
	defer done(fd)
	return d.s.changeAttrs(ctx, ap, fd, a)
}

// target is an O_PATH descriptor of exactly name in d ("" for d itself)
// and the function that lets it go.
func (d *Dir) target(name string) (int, func(int), error) {
	fd, done, _, err := d.targetG(name)
	return fd, done, err
}

// targetG is target with the count of directories moved when the
// descriptor was known in place (atG).
func (d *Dir) targetG(name string) (int, func(int), uint64, error) {
	dirfd, done, g, err := d.atG()
	if err != nil || name == "" {
		return dirfd, done, g, err
	}
	defer done(dirfd)
	if err := oneName(name); err != nil {
		return -1, nil, g, err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, nil, g, err
	}
	return fd, closeFd, g, nil
}

// xattr runs fn on a descriptor of exactly name in d ("" for d itself).
func (d *Dir) xattr(name string, fn func(fd int) error) error {
	fd, done, err := d.target(name)
	if err != nil {
		return PathErr(OpXattr, d.child(name), err)
	}
	defer done(fd)
	if err := fn(fd); err != nil {
		return PathErr(OpXattr, d.child(name), err)
	}
	return nil
}

// xattrAt runs read (an *xattrat call on name in d's descriptor); ok is
// false where the kernel lacks the call, and the caller goes through a
// descriptor of the file (xattr).
func (d *Dir) xattrAt(name string, read func(dirfd int) (int, bool, error)) (int, bool, error) {
	dirfd, done, err := d.at()
	if err != nil {
		return 0, true, PathErr(OpXattr, d.child(name), err)
	}
	defer done(dirfd)
	n, ok, err := read(dirfd)
	if err != nil {
		err = PathErr(OpXattr, d.child(name), err)
	}
	return n, ok, err
}

// Getxattr reads the extended attribute attr of name in d into dest (its
// size when dest is empty).
func (d *Dir) Getxattr(name, attr string, dest []byte) (int, error) {
	if reservedXattr(attr) {
		return 0, PathErr(OpXattr, d.child(name), unix.ENODATA)
	}
	if n, ok, err := d.xattrAt(name, func(dirfd int) (int, bool, error) {
		return safeat.GetxattrAt(dirfd, name, attr, dest)
	}); ok {
		return n, err
	}
	var n int
	err := d.xattr(name, func(fd int) (err error) {
		n, err = safeat.Getxattr(fd, attr, dest)
		return err
	})
	return n, err
}

// Listxattr lists the extended attribute names of name in d into dest,
// but the daemon's own (MarkXattr; the size asked for with an empty dest
// may count it).
func (d *Dir) Listxattr(name string, dest []byte) (int, error) {
	if n, ok, err := d.xattrAt(name, func(dirfd int) (int, bool, error) {
		return safeat.ListxattrAt(dirfd, name, dest)
	}); ok {
		return dropReserved(dest, n, err)
	}
	var n int
	err := d.xattr(name, func(fd int) (err error) {
		n, err = safeat.Listxattr(fd, dest)
		return err
	})
	return dropReserved(dest, n, err)
}

// dropReserved takes the daemon's own attribute out of the list of n
// bytes in dest (names each ended by a NUL), moving the rest down.
func dropReserved(dest []byte, n int, err error) (int, error) {
	if err != nil || len(dest) == 0 || n > len(dest) {
		return n, err
	}
	mark := MarkXattr + "\x00"
	for i := 0; i < n; {
		end := bytes.IndexByte(dest[i:n], 0)
		if end < 0 {
			break
		}
		if string(dest[i:i+end+1]) == mark {
			copy(dest[i:], dest[i+end+1:n])
			n -= end + 1
			continue
		}
		i += end + 1
	}
	return n, nil
}

// Setxattr sets the extended attribute attr of name in d; told as chmod.
func (d *Dir) Setxattr(ctx context.Context, name, attr string, data []byte, flags int) error {
	if reservedXattr(attr) {
		return PathErr(OpXattr, d.child(name), unix.EPERM)
	}
	return d.changeXattr(ctx, name, func(fd int) error { return safeat.Setxattr(fd, attr, data, flags) })
}

// Removexattr removes the extended attribute attr of name in d; told as
// chmod.
func (d *Dir) Removexattr(ctx context.Context, name, attr string) error {
	if reservedXattr(attr) {
		return PathErr(OpXattr, d.child(name), unix.EPERM)
	}
	return d.changeXattr(ctx, name, func(fd int) error { return safeat.Removexattr(fd, attr) })
}

func (d *Dir) changeXattr(ctx context.Context, name string, change func(fd int) error) error {
	ap := d.child(name)
	ctx, fd, done, err := d.changeTarget(ctx, name)
	if err != nil {
		return PathErr(OpXattr, ap, err)
	}
	defer done(fd)
	return d.s.changeXattrFd(ctx, ap, fd, change)
}

// exists reports whether name is in dirfd (not followed).
func exists(dirfd int, name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// refusedUnlessExists is the answer of a create the quota refused: EEXIST
// when name is there already (what the call would have said with room),
// else the quota's error.
func refusedUnlessExists(dirfd int, name, op, ap string, qerr error) error {
	if exists(dirfd, name) {
		return PathErr(op, ap, unix.EEXIST)
	}
	return qerr
}
