package core

import (
	"context"
	"encoding/hex"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/core/journal"
	"sandfs/core/precond"
	"sandfs/core/quota"
)

// WriteOptions shape a WriteFile.
type WriteOptions struct {
	// MkdirParents creates missing parent directories (mode 0755).
	MkdirParents bool
	// Mode of a new file (default 0644); an existing file keeps its mode,
	// owner and group unless Mode is set. Setuid and setgid are refused in
	// Mode and dropped from a kept mode unless allowed (setid.go).
	Mode fs.FileMode
	// Pre is what the target must be for the write to happen, checked
	// before the body is read and again just before the rename
	// (precondition.go); a mismatch is a *precond.Error.
	Pre precond.Precondition
	// ETag, when not nil, receives the ETag of the file written.
	ETag *string
}

// TempPrefix starts the name of every temp file core makes beside a target
// (".sandfs-<random>.part"); a start-up sweep may remove leftovers.
const TempPrefix = ".sandfs-"

// WriteFile streams r into the file at p and replaces it atomically (temp
// file beside it, fsync, rename). A final symlink is followed within the
// root, so the file it points at is replaced, not the link. Writing over a
// directory is EISDIR, over a FIFO, socket or device EINVAL (the node stays). It returns the bytes written. On any error, r failing
// half-way included, the old content stays whole and no temp file is left.
func (s *Sandbox) WriteFile(ctx context.Context, p string, r io.Reader, o WriteOptions) (int64, error) {
	tg, err := s.writeTarget(ctx, p, o.MkdirParents)
	if err != nil {
		return 0, err
	}
	ap, dirfd, name := tg.ap, tg.dirfd, tg.name
	defer unix.Close(dirfd)

	claim := s.watch.ClaimLanding(ap)
	defer claim.End()
	mode := uint32(0o644)
	existed := false
	owner := -1
	group := -1
	var freed quota.Count // what the file replaced held (core/quota)
	exact := false        // the Op's counts are exactly the change (replacing)
	st := tg.st
	switch err := tg.stErr; {
	case err == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR:
		return 0, PathErr(OpWrite, ap, unix.EISDIR)
	case err == nil && NotRegular(st.Mode):
		return 0, PathErr(OpWrite, ap, unix.EINVAL)
	case err == nil:
		existed = true
		mode = s.KeptMode(st.Mode & 0o7777)
		owner, group = int(st.Uid), int(st.Gid)
		freed, exact = s.replacing(ctx, ap, &st)
	case err != unix.ENOENT:
		return 0, PathErr(OpWrite, ap, err)
	default:
		freed, exact = s.replacing(ctx, ap, nil)
	}
	if err := checkAt(OpWrite, ap, o.Pre, dirfd, name); err != nil {
		return 0, err // before reading a byte of the body
	}
	uop := s.quota.Begin()
	defer uop.End(0, 0) // a failed write: its reservation released
	if !existed {
		if err := uop.Reserve(OpWrite, ap, 0, 1); err != nil {
			return 0, err
		}
	}
	if o.Mode != 0 {
		mode = UnixPerm(o.Mode)
		if s.refusesSetid(mode) {
			return 0, setidErr(OpWrite, ap)
		}
	}

	dir, _ := apipath.Split(ap)
	tmp, f, err := createTemp(dirfd, ap, func(name string) { claim.Temp(apipath.Child(dir, name)) })
	if err != nil {
		return 0, PathErr(OpWrite, ap, err)
	}
	fail := func(err error) (int64, error) {
		f.Close()
		unix.Unlinkat(dirfd, tmp, 0)
		return 0, PathErr(OpWrite, ap, err)
	}
	n, err := copyToFile(f, &quota.Reader{R: r, Need: func(n int64) error { return uop.ReserveTo(OpWrite, ap, n-freed.Bytes) }})
	if err != nil {
		return fail(err)
	}
	if err := ctx.Err(); err != nil {
		return fail(err)
	}
	if owner >= 0 {
		// Keep the replaced file's owner where we may (root may; others
		// keep their own uid, as any editor that saves by rename does).
		_ = f.Chown(owner, group)
	} else if err := chownNewFd(ctx, int(f.Fd())); err != nil {
		return fail(err) // a new file: the owner in ctx (owner.go), or nothing
	}
	if err := unix.Fchmod(int(f.Fd()), mode); err != nil {
		return fail(err)
	}
	if err := f.Sync(); err != nil {
		return fail(err)
	}
	// The written file's stat, taken from its descriptor: its ETag, the
	// number a fork learns, and the events (rename changes none of the
	// size, mtime, inode and mode they tell).
	made, err := tellETag(f, o.ETag, true)
	if err != nil {
		return fail(err)
	}
	if err := f.Close(); err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return 0, PathErr(OpWrite, ap, err)
	}
	if err := renameChecked(OpWrite, ap, o.Pre, dirfd, tmp, name); err != nil {
		unix.Unlinkat(dirfd, tmp, 0)
		return 0, err
	}
	claim.Land()
	if s.upper != nil {
		// Made in a fork's upper, as every new file is; the file it
		// replaced is gone.
		s.upperMade.replace(tg.st.Ino, made.Ino)
	}
	// One entry in, what was at the name out: in a fork that may be no
	// entry at all (a lower file replaced, which the upper never held).
	if exact {
		uop.EndExact(n-freed.Bytes, 1-freed.Entries)
	} else {
		uop.End(n-freed.Bytes, 1-freed.Entries)
	}
	// Told with made: no look at the path again (Tell's), which costs
	// most through a fork's overlay.
	if !existed {
		s.tellStat(ctx, journal.Create, ap, "", false, &made)
	}
	s.tellStat(ctx, journal.Write, ap, "", false, &made)
	return n, nil
}

// renameChecked renames tmp over name in dirfd (the file at API path ap)
// when pre holds, holding ap's stripe lock across the check and the rename
// (precondition.go).
func renameChecked(op, ap string, pre precond.Precondition, dirfd int, tmp, name string) error {
	unlock := locks.lock(ap)
	defer unlock()
	if err := checkAt(op, ap, pre, dirfd, name); err != nil {
		return err
	}
	if err := unix.Renameat(dirfd, tmp, dirfd, name); err != nil {
		return PathErr(op, ap, err)
	}
	return nil
}

// tellETag stores the ETag of the open file f in *dst when dst is not
// nil, and returns f's stat when it took one (always, with want).
func tellETag(f *os.File, dst *string, want bool) (unix.Stat_t, error) {
	var st unix.Stat_t
	if dst == nil && !want {
		return st, nil
	}
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return st, err
	}
	if dst != nil {
		*dst = statETag(&st)
	}
	return st, nil
}

// target is where an operation on a file lands: its API path, an O_PATH
// fd on its directory (the caller's to close; -1 when the directory is
// missing) with the last name, and the lstat of that name as the
// resolution saw it (stErr: its error, ENOENT for a new file; the
// directory's error when dirfd is -1).
type target struct {
	ap, name string
	dirfd    int
	st       unix.Stat_t
	stErr    error
}

// writeTarget resolves the file a write of p lands in (Root.leaf), the
// parents made when asked. It opens the directory once and makes parents
// only when it is missing: a write's path is resolved through a fork's
// overlay at a cost for each open.
func (s *Sandbox) writeTarget(ctx context.Context, p string, mkdirParents bool) (target, error) {
	ap, err := s.Clean(p)
	if err != nil {
		return target{dirfd: -1}, err
	}
	t, err := s.root.leaf(ap)
	if err == nil && t.dirfd < 0 && t.stErr == unix.ENOENT && mkdirParents {
		dir, _ := apipath.Split(t.ap)
		if err := s.mkdirAllFor(ctx, dir, 0o755, 1); err != nil {
			return t, err
		}
		t, err = s.root.leaf(t.ap)
	}
	if err == nil && t.dirfd < 0 {
		err = t.stErr
	}
	if err != nil {
		return t, PathErr(OpWrite, t.ap, err)
	}
	return t, nil
}

// createTemp makes a new empty temp file in dirfd, named for the target.
// claim is told the name before the file exists.
func createTemp(dirfd int, apiPath string, claim func(name string)) (string, *os.File, error) {
	for tries := 0; ; tries++ {
		name := TempName()
		claim(name)
		fd, err := unix.Openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == unix.EEXIST && tries < 16 {
			continue
		}
		if err != nil {
			return "", nil, err
		}
		return name, os.NewFile(uintptr(fd), apiPath), nil
	}
}

// TempName is ".sandfs-<16 hex>.part".
func TempName() string {
	var b [8]byte
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return TempPrefix + hex.EncodeToString(b[:]) + ".part"
}

// UnixPerm is an fs.FileMode's permission and special bits as mode_t bits
// (0o4755 for a setuid rwxr-xr-x): the one conversion between Go's mode and
// the kernel's, for core's syscalls and for the answers that print a mode.
func UnixPerm(m fs.FileMode) uint32 {
	u := uint32(m.Perm())
	if m&fs.ModeSetuid != 0 {
		u |= unix.S_ISUID
	}
	if m&fs.ModeSetgid != 0 {
		u |= unix.S_ISGID
	}
	if m&fs.ModeSticky != 0 {
		u |= unix.S_ISVTX
	}
	return u
}

// followLeaf follows a final symlink of a clean API path the way the root's
// resolution would (an absolute target is taken from the root), so that an
// operation replacing the file by rename replaces the target, not the link.
// A path whose parent is missing is returned as it is.
func (r *Root) followLeaf(ap string) (string, error) {
	t, err := r.leaf(ap)
	switch {
	case err != nil:
		return t.ap, err
	case t.dirfd >= 0:
		unix.Close(t.dirfd)
	case t.stErr != unix.ENOENT && t.stErr != unix.EINVAL:
		return t.ap, t.stErr
	}
	return t.ap, nil
}

// leaf resolves the file at the clean API path ap, following final
// symlinks: the target it lands on, its directory held open. A missing
// directory is no error: the target says so (dirfd -1), at the path
// reached, for the caller to make it or refuse. err is a symlink's:
// too many (ELOOP), unreadable, or pointing out of the root (ENOENT).
func (r *Root) leaf(ap string) (t target, err error) {
	t.ap = ap
	for links := 0; ; {
		t.st = unix.Stat_t{}
		if t.dirfd, t.name, t.stErr = r.parent(t.ap); t.stErr != nil {
			t.dirfd = -1
			return t, nil
		}
		t.stErr = unix.Fstatat(t.dirfd, t.name, &t.st, unix.AT_SYMLINK_NOFOLLOW)
		if t.stErr != nil || t.st.Mode&unix.S_IFMT != unix.S_IFLNK {
			return t, nil
		}
		next, err := r.followIn(t.dirfd, t.ap, t.name, &links)
		unix.Close(t.dirfd)
		t.dirfd = -1
		if err != nil {
			return t, err
		}
		t.ap = next
	}
}

// followIn is one step of leaf on the symlink name in dirfd (the
// parent of API path ap): the API path it points to. links counts the
// symlinks followed so far.
func (r *Root) followIn(dirfd int, ap, name string, links *int) (string, error) {
	if *links >= maxSymlinks {
		return ap, unix.ELOOP
	}
	*links++
	target, err := Readlinkat(dirfd, name)
	if err != nil {
		return ap, err
	}
	dir, _ := apipath.Split(ap)
	next, err := cleanAPI(dir, target)
	if err != nil {
		return ap, unix.ENOENT
	}
	return next, nil
}
