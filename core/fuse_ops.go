package core

import (
	"context"
	"os"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/internal/safeat"
)

// Operations for the FUSE mirror. The kernel speaks in single syscalls
// (create with these flags, rename with these flags, set these attributes),
// so these are the syscalls themselves, resolved the way every other core
// operation is: the parent directory beneath the root fd, the last
// component with the *at call and never followed. Each mutating one claims
// its paths in the ledger and appends one event made by the actor in ctx.
// Paths are API paths; the caller's uid and gid, where given (>= 0), become
// the owner of what is created.

// Op names of the mirror's operations.
const (
	OpCreate   = "create"
	OpMknod    = "mknod"
	OpSymlink  = "symlink"
	OpLink     = "link"
	OpSetattr  = "setattr"
	OpXattr    = "xattr"
	OpReadlink = "readlink"
)

// LstatRaw is lstat(2) of p beneath the root, as the kernel reports it.
func (s *Sandbox) LstatRaw(ctx context.Context, p string) (unix.Stat_t, error) {
	st, _, err := s.LookupRaw(ctx, p, false)
	return st, err
}

// LookupRaw is LstatRaw that, when keepDir is set and p is a directory,
// also returns an O_PATH descriptor on it (else -1), which the caller
// closes: the mirror holds one per directory it knows, so the GETATTR the
// kernel asks of a directory after every change in it is one fstat
// (FstatRaw) instead of a resolution beneath the root.
func (s *Sandbox) LookupRaw(ctx context.Context, p string, keepDir bool) (unix.Stat_t, int, error) {
	s.fuseOps[fopGetattr].Add(1)
	var st unix.Stat_t
	ap, err := s.Clean(p)
	if err != nil {
		return st, -1, err
	}
	fd, err := s.openat(ap, unix.O_PATH|unix.O_NOFOLLOW, 0)
	if err != nil {
		return st, -1, pathErr(OpStat, ap, err)
	}
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return st, -1, pathErr(OpStat, ap, err)
	}
	if !keepDir || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		fd = -1
	}
	return st, fd, nil
}

// FstatRaw is fstat(2) of a descriptor LookupRaw returned for API path p.
func (s *Sandbox) FstatRaw(fd int, p string) (unix.Stat_t, error) {
	s.fuseOps[fopGetattr].Add(1)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return st, pathErr(OpStat, p, err)
	}
	return st, nil
}

// OpenAt opens the existing file at p with open(2) flags, never following a
// final symlink. O_CREAT is refused (EINVAL): use Create.
func (s *Sandbox) OpenAt(ctx context.Context, p string, flags int, mode uint32) (*os.File, error) {
	s.fuseOps[fopOpen].Add(1)
	ap, err := s.Clean(p)
	if err != nil {
		return nil, err
	}
	if flags&unix.O_CREAT != 0 {
		return nil, pathErr(OpOpen, ap, unix.EINVAL)
	}
	fd, err := s.openat(ap, flags|unix.O_NOFOLLOW, mode)
	if err != nil {
		return nil, pathErr(OpOpen, ap, err)
	}
	return os.NewFile(uintptr(fd), ap), nil
}

// Create creates (or, without O_EXCL, opens) the regular file at p with the
// given flags and mode (the caller's umask already applied), owned by uid
// and gid where >= 0, and returns it with its stat. A new file is told as
// create. The claim on p is returned open with the descriptor: the caller
// ends it (Done) once it stops writing through it, so the echoes of those
// writes are claimed by the same claim as the create's (the mirror ends it
// at release): with DoneEcho when the file was left as made, since the
// create's echo is then the last.
func (s *Sandbox) Create(ctx context.Context, p string, flags int, mode uint32, uid, gid int) (*os.File, unix.Stat_t, *Claim, error) {
	s.fuseOps[fopCreate].Add(1)
	var st unix.Stat_t
	ap, err := s.Clean(p)
	if err != nil {
		return nil, st, nil, err
	}
	dirfd, name, err := s.parentAt(ap)
	if err != nil {
		return nil, st, nil, pathErr(OpCreate, ap, err)
	}
	defer s.closeParent(dirfd)
	claim := s.ClaimEcho(ap, journal.Create)
	fd, err := unix.Openat(dirfd, name, flags|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	created := err == nil
	if err == unix.EEXIST && flags&unix.O_EXCL == 0 {
		fd, err = unix.Openat(dirfd, name, (flags&^unix.O_CREAT)|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	}
	if err != nil {
		claim.Done()
		return nil, st, nil, pathErr(OpCreate, ap, err)
	}
	if !created {
		claim.NoEcho()
	} else if uid, gid, _, ok := callerOwner(dirfd, uid, gid); ok {
		claim.NoEcho() // the chown's echo comes after the create's
		unix.Fchown(fd, uid, gid)
	}
	serr := unix.Fstat(fd, &st)
	if created && serr == nil && st.Mode&0o7777 != mode&0o7777 {
		// The daemon's umask cut bits the caller kept, or the chown
		// cleared setuid/setgid (modes.go).
		claim.NoEcho()
		if safeat.Chmod(fd, mode&0o7777) == nil {
			serr = unix.Fstat(fd, &st)
		}
	}
	if created {
		if serr != nil {
			s.emitStat(ctx, journal.Create, ap, nil)
		} else {
			s.emitStat(ctx, journal.Create, ap, &st)
		}
	}
	if serr != nil {
		unix.Close(fd)
		claim.Done()
		return nil, st, nil, pathErr(OpCreate, ap, serr)
	}
	return os.NewFile(uintptr(fd), ap), st, claim, nil
}

// Mknod makes a node (FIFO, socket, device, or regular file) at p.
func (s *Sandbox) Mknod(ctx context.Context, p string, mode uint32, dev uint64, uid, gid int) error {
	s.fuseOps[fopMknod].Add(1)
	return s.makeAt(ctx, OpMknod, p, uid, gid, mode, false, func(dirfd int, name string) error {
		return unix.Mknodat(dirfd, name, mode, int(dev))
	})
}

// MkdirAt makes the directory p with exactly mode (umask already applied).
func (s *Sandbox) MkdirAt(ctx context.Context, p string, mode uint32, uid, gid int) error {
	s.fuseOps[fopMkdir].Add(1)
	return s.makeAt(ctx, OpMkdir, p, uid, gid, mode, true, func(dirfd int, name string) error {
		return unix.Mkdirat(dirfd, name, mode)
	})
}

// Symlink makes a symlink at p pointing at target (stored as given).
func (s *Sandbox) Symlink(ctx context.Context, target, p string, uid, gid int) error {
	s.fuseOps[fopSymlink].Add(1)
	return s.makeAt(ctx, OpSymlink, p, uid, gid, 0, false, func(dirfd int, name string) error {
		return unix.Symlinkat(target, dirfd, name)
	})
}

func (s *Sandbox) makeAt(ctx context.Context, op, p string, uid, gid int, mode uint32, isDir bool, mk func(dirfd int, name string) error) error {
	ap, err := s.Clean(p)
	if err != nil {
		return err
	}
	dirfd, name, err := s.parentAt(ap)
	if err == unix.EINVAL {
		err = unix.EEXIST
	}
	if err != nil {
		return pathErr(op, ap, err)
	}
	defer s.closeParent(dirfd)
	claim := s.Claim(ap)
	defer claim.Done()
	if err := mk(dirfd, name); err != nil {
		return pathErr(op, ap, err)
	}
	owner := daemonUid
	if uid, gid, _, ok := callerOwner(dirfd, uid, gid); ok && safeat.LchownAt(dirfd, name, uid, gid) == nil && uid >= 0 {
		owner = uid
	}
	exactMode(dirfd, name, mode, isDir, owner)
	s.emit(ctx, journal.Create, ap, "", isDir)
	return nil
}

// Link makes newp a hard link to the file at oldp (a symlink links as itself).
func (s *Sandbox) Link(ctx context.Context, oldp, newp string) error {
	s.fuseOps[fopLink].Add(1)
	oa, na, err := s.cleanBoth(oldp, newp)
	if err != nil {
		return err
	}
	odir, oname, err := s.parent(oa)
	if err != nil {
		return pathErr(OpLink, oa, err)
	}
	defer unix.Close(odir)
	ndir, nname, err := s.parent(na)
	if err != nil {
		return pathErr(OpLink, na, err)
	}
	defer unix.Close(ndir)
	claim := s.Claim(na)
	defer claim.Done()
	if err := unix.Linkat(odir, oname, ndir, nname, 0); err != nil {
		return pathErr(OpLink, na, err)
	}
	s.emit(ctx, journal.Create, na, "", false)
	return nil
}

// Rename is renameat2(2) of from to to with the kernel's flags
// (RENAME_NOREPLACE, RENAME_EXCHANGE). It is one rename event with
// old_path; an exchange is two, one each way.
func (s *Sandbox) Rename(ctx context.Context, from, to string, flags uint) error {
	s.fuseOps[fopRename].Add(1)
	fa, ta, err := s.cleanBoth(from, to)
	if err != nil {
		return err
	}
	fdir, fname, tdir, tname, err := s.renameParents(fa, ta)
	if err != nil {
		return err
	}
	defer unix.Close(fdir)
	defer unix.Close(tdir)
	claim := s.Claim(fa, ta)
	defer claim.Done()
	if flags == 0 {
		err = unix.Renameat(fdir, fname, tdir, tname)
	} else {
		err = unix.Renameat2(fdir, fname, tdir, tname, flags)
	}
	if err != nil {
		return pathErr(OpMove, fa, err)
	}
	s.emit(ctx, journal.Rename, ta, fa, false)
	if flags&unix.RENAME_EXCHANGE != 0 {
		s.emit(ctx, journal.Rename, fa, ta, false)
	}
	return nil
}

// Unlink removes the non-directory p.
func (s *Sandbox) Unlink(ctx context.Context, p string) error {
	s.fuseOps[fopUnlink].Add(1)
	return s.removeAt(ctx, p, 0)
}

// Rmdir removes the empty directory p.
func (s *Sandbox) Rmdir(ctx context.Context, p string) error {
	s.fuseOps[fopRmdir].Add(1)
	return s.removeAt(ctx, p, unix.AT_REMOVEDIR)
}

func (s *Sandbox) removeAt(ctx context.Context, p string, flags int) error {
	ap, err := s.Clean(p)
	if err != nil {
		return err
	}
	dirfd, name, err := s.parentAt(ap)
	if err == unix.EINVAL {
		err = unix.EBUSY
	}
	if err != nil {
		return pathErr(OpRemove, ap, err)
	}
	defer s.closeParent(dirfd)
	dir := flags == unix.AT_REMOVEDIR
	// A file's one echo is its Remove; a directory's own watch adds more.
	claim := s.ClaimEcho(ap, journal.Remove)
	if dir {
		claim.NoEcho()
	}
	if err := unix.Unlinkat(dirfd, name, flags); err != nil {
		claim.Done()
		return pathErr(OpRemove, ap, err)
	}
	s.emit(ctx, journal.Remove, ap, "", dir)
	claim.DoneEcho()
	return nil
}

// Readlink reads the symlink at p.
func (s *Sandbox) Readlink(ctx context.Context, p string) (string, error) {
	s.fuseOps[fopReadlink].Add(1)
	ap, err := s.Clean(p)
	if err != nil {
		return "", err
	}
	dirfd, name, err := s.parentAt(ap)
	if err != nil {
		return "", pathErr(OpReadlink, ap, err)
	}
	defer s.closeParent(dirfd)
	t, err := readlinkat(dirfd, name)
	if err != nil {
		return "", pathErr(OpReadlink, ap, err)
	}
	return t, nil
}

// SetAttr says which attributes a Setattr changes (nil: unchanged).
type SetAttr struct {
	Mode         *uint32 // permission and special bits
	Uid, Gid     *int
	Size         *int64
	Atime, Mtime *unix.Timespec // unix.UTIME_NOW in Nsec for "now"
	// setidDirOnly refuses (EPERM) a Mode with set-id bits unless the file
	// is a directory, checked on the descriptor changed (setid.go).
	setidDirOnly bool
}

// Setattr changes the attributes of p, through fd when fd >= 0 (an open
// handle on p: works for an unlinked file and for ftruncate). A size change
// is told as write, anything else as chmod.
func (s *Sandbox) Setattr(ctx context.Context, p string, fd int, a SetAttr) error {
	s.fuseOps[fopSetattr].Add(1)
	return s.setattr(ctx, p, fd, a)
}

// setattr is Setattr, uncounted (the REST chmod and chown use it).
func (s *Sandbox) setattr(ctx context.Context, p string, fd int, a SetAttr) error {
	ap, err := s.Clean(p)
	if err != nil {
		return err
	}
	claim := s.Claim(ap)
	defer claim.Done()
	if fd < 0 {
		pfd, err := s.openat(ap, unix.O_PATH|unix.O_NOFOLLOW, 0)
		if err != nil {
			return pathErr(OpSetattr, ap, err)
		}
		defer unix.Close(pfd)
		fd = pfd
	}
	if a.Mode != nil {
		if a.setidDirOnly {
			var st unix.Stat_t
			if err := unix.Fstat(fd, &st); err != nil {
				return pathErr(OpSetattr, ap, err)
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return setidErr(OpSetattr, ap)
			}
		}
		if err := safeat.Chmod(fd, *a.Mode&0o7777); err != nil {
			return pathErr(OpSetattr, ap, err)
		}
	}
	if a.Uid != nil || a.Gid != nil {
		uid, gid := a.owner()
		if err := safeat.Chown(fd, uid, gid); err != nil {
			return pathErr(OpSetattr, ap, err)
		}
	}
	if a.Size != nil {
		// Truncate through a writable fd opened on the same inode.
		wfd, err := safeat.Reopen(fd, unix.O_WRONLY|unix.O_NONBLOCK)
		if err != nil {
			return pathErr(OpSetattr, ap, err)
		}
		err = unix.Ftruncate(wfd, *a.Size)
		unix.Close(wfd)
		if err != nil {
			return pathErr(OpSetattr, ap, err)
		}
	}
	if a.Atime != nil || a.Mtime != nil {
		if err := safeat.Utimes(fd, a.times()); err != nil {
			return pathErr(OpSetattr, ap, err)
		}
	}
	if a.Size != nil {
		s.emit(ctx, journal.Write, ap, "", false)
	}
	if a.Mode != nil || a.Uid != nil || a.Gid != nil || a.Atime != nil || a.Mtime != nil {
		s.emit(ctx, journal.Chmod, ap, "", false)
	}
	return nil
}

// xattrAt runs fn on a descriptor of exactly the file at p.
func (s *Sandbox) xattrAt(p string, fn func(fd int) error) error {
	ap, err := s.Clean(p)
	if err != nil {
		return err
	}
	fd, err := s.xattrTarget(ap, false)
	if err != nil {
		return pathErr(OpXattr, ap, err)
	}
	defer unix.Close(fd)
	if err := fn(fd); err != nil {
		return pathErr(OpXattr, ap, err)
	}
	return nil
}

// Getxattr reads the extended attribute name of p into dest (its size when
// dest is empty).
func (s *Sandbox) Getxattr(ctx context.Context, p, name string, dest []byte) (int, error) {
	s.fuseOps[fopGetxattr].Add(1)
	var n int
	err := s.xattrAt(p, func(fd int) (err error) {
		n, err = safeat.Getxattr(fd, name, dest)
		return err
	})
	return n, err
}

// Listxattr lists the extended attribute names of p into dest.
func (s *Sandbox) Listxattr(ctx context.Context, p string, dest []byte) (int, error) {
	s.fuseOps[fopListxattr].Add(1)
	var n int
	err := s.xattrAt(p, func(fd int) (err error) {
		n, err = safeat.Listxattr(fd, dest)
		return err
	})
	return n, err
}

// Setxattr sets the extended attribute name of p; told as chmod.
func (s *Sandbox) Setxattr(ctx context.Context, p, name string, data []byte, flags int) error {
	s.fuseOps[fopSetxattr].Add(1)
	ap, err := s.Clean(p)
	if err != nil {
		return err
	}
	return s.changeXattr(ctx, ap, false, func(fd int) error { return safeat.Setxattr(fd, name, data, flags) })
}

// Removexattr removes the extended attribute name of p; told as chmod.
func (s *Sandbox) Removexattr(ctx context.Context, p, name string) error {
	s.fuseOps[fopRemovexattr].Add(1)
	ap, err := s.Clean(p)
	if err != nil {
		return err
	}
	return s.changeXattr(ctx, ap, false, func(fd int) error { return safeat.Removexattr(fd, name) })
}

// Statfs reports the filesystem holding the root.
func (s *Sandbox) Statfs(st *unix.Statfs_t) error {
	s.fuseOps[fopStatfs].Add(1)
	return unix.Fstatfs(s.root, st)
}

// FSType is the filesystem type (statfs f_type) of the root; not counted
// as a mirror operation.
func (s *Sandbox) FSType() (int64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(s.root, &st); err != nil {
		return 0, err
	}
	return st.Type, nil
}

// Emit appends one event of type typ on p (old: the old path of a rename)
// made by the actor in ctx, describing p as it is now. The mirror uses it
// for changes it tells late: writes through a handle, told at flush or
// release.
func (s *Sandbox) Emit(ctx context.Context, typ journal.Type, p, old string) {
	ap, err := s.Clean(p)
	if err != nil {
		return
	}
	s.emit(inHandler(ctx), typ, ap, old, false)
}
