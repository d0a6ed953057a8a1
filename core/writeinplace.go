package core

import (
	"context"
	"io"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/core/precond"
	"sandfs/core/quota"
)

// InPlaceOptions shape a WriteInPlace.
type InPlaceOptions struct {
	Append       bool        // add to the end instead of truncating
	MkdirParents bool        // create missing parents (mode 0755)
	Mode         fs.FileMode // mode of a new file (default 0644); an existing file keeps its own (less setuid and setgid unless allowed: setid.go)
	// Pre is what the target must be, checked on the opened file before
	// its first byte changes (precondition.go): IfNoneMatch only creates
	// (O_EXCL), IfMatch never creates.
	Pre  precond.Precondition
	ETag *string // when not nil, receives the ETag of the file written
}

// WriteInPlace streams r into the file at p through the file itself: the
// destination keeps its inode, owner and mode, and no temp file is made
// (the AIO plain write: "a plain write keeps the destination's inode and
// creates no temporary file"). Without Append the file is truncated first;
// a reader failing half-way leaves what was written so far. A new file is
// created (and given to the owner in ctx, see owner.go) before any byte is
// written. A final symlink is followed within the root; a directory is
// EISDIR; a FIFO, socket or device is EINVAL. It returns the bytes written.
// The whole write holds ap's stripe lock (precondition.go): callers give
// it bodies they hold already.
func (s *Sandbox) WriteInPlace(ctx context.Context, p string, r io.Reader, o InPlaceOptions) (int64, error) {
	tg, err := s.writeTarget(ctx, p, o.MkdirParents)
	if err != nil {
		return 0, err
	}
	ap, dirfd, name := tg.ap, tg.dirfd, tg.name
	defer unix.Close(dirfd)
	claim := s.watch.Claim(ap)
	defer claim.Done()
	unlock := locks.lock(ap)
	defer unlock()

	mode := uint32(0o644)
	if o.Mode != 0 {
		mode = UnixPerm(o.Mode)
		if s.refusesSetid(mode) {
			return 0, setidErr(OpWrite, ap)
		}
	}
	flags := unix.O_WRONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY | unix.O_CLOEXEC
	if o.Append {
		flags |= unix.O_APPEND
	}
	created := false
	var fd int
	uop := s.quota.Begin() // the new file's entry (core/quota)
	defer func() {
		if created {
			uop.End(0, 1)
		} else {
			uop.End(0, 0)
		}
	}()
	reserved := false
	for tries := 0; ; tries++ {
		if o.Pre.IfNoneMatch {
			err = unix.ENOENT // create only: straight to O_EXCL
		} else {
			fd, err = unix.Openat(dirfd, name, flags|unix.O_NOFOLLOW, 0) // (flags has it: said again for .ci/syscheck)
		}
		if err == unix.ENOENT && len(o.Pre.IfMatch) > 0 {
			return 0, &precond.Error{Op: OpWrite, Path: ap}
		}
		if err != unix.ENOENT || tries >= 8 {
			break
		}
		if !reserved {
			if err := uop.Reserve(OpWrite, ap, 0, 1); err != nil {
				return 0, err
			}
			reserved = true
		}
		fd, err = unix.Openat(dirfd, name, flags|unix.O_CREAT|unix.O_EXCL, mode)
		if err == nil {
			created = true
			break
		}
		if err != unix.EEXIST {
			break
		}
		if o.Pre.IfNoneMatch {
			if err := checkAt(OpWrite, ap, o.Pre, dirfd, name); err != nil {
				return 0, err // it exists: say its ETag
			}
		}
	}
	if err == unix.ELOOP {
		err = unix.EINVAL // a symlink appeared in its place after followLeaf
	}
	err = specialErr(err) // a socket, or a FIFO nobody reads
	if err != nil {
		return 0, PathErr(OpWrite, ap, err)
	}
	f := os.NewFile(uintptr(fd), ap)
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, PathErr(OpWrite, ap, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return 0, PathErr(OpWrite, ap, unix.EINVAL)
	}
	if cur := statETag(&st); !created && !o.Pre.Holds(cur) {
		return 0, &precond.Error{Op: OpWrite, Path: ap, Current: cur}
	}
	if err := unix.SetNonblock(fd, false); err != nil {
		return 0, PathErr(OpWrite, ap, err)
	}
	if created {
		if err := chownNewFd(ctx, fd); err != nil {
			unix.Unlinkat(dirfd, name, 0)
			created = false // gone again: no entry
			return 0, PathErr(OpWrite, ap, err)
		}
		if o.Mode != 0 {
			unix.Fchmod(fd, mode) // past the umask
		}
		s.Tell(ctx, journal.Create, ap, "", false)
	}
	if !created && st.Mode&setidBits != 0 && s.KeptMode(st.Mode) != st.Mode {
		// Root keeps set-id bits through a write (CAP_FSETID): drop them
		// before the first byte, as the kernel does for anyone else.
		if err := unix.Fchmod(fd, s.KeptMode(st.Mode&0o7777)); err != nil {
			return 0, PathErr(OpWrite, ap, err)
		}
	}
	p0 := s.quota.BeginInPlace(&st, nil) // the bytes it writes (core/quota)
	defer p0.End(fd)
	base := int64(0) // the size the body's bytes go on top of
	if o.Append {
		base = p0.Before()
	}
	if lr, ok := r.(interface{ Len() int }); ok {
		// A body held whole: refused past the quota before the file is
		// touched, so the old content stays.
		if err := p0.GrowTo(OpWrite, ap, base+int64(lr.Len())); err != nil {
			return 0, err
		}
	}
	if !o.Append && !created {
		if err := unix.Ftruncate(fd, 0); err != nil {
			return 0, PathErr(OpWrite, ap, err)
		}
	}
	n, err := copyToFile(f, &quota.Reader{R: r, Need: func(n int64) error { return p0.GrowTo(OpWrite, ap, base+n) }})
	if err != nil {
		s.Tell(ctx, journal.Write, ap, "", false)
		return n, PathErr(OpWrite, ap, err)
	}
	if _, err := tellETag(f, o.ETag, false); err != nil {
		return n, PathErr(OpWrite, ap, err)
	}
	p0.End(fd)
	if err := f.Close(); err != nil {
		return n, PathErr(OpWrite, ap, err)
	}
	s.Tell(ctx, journal.Write, ap, "", false)
	return n, nil
}
