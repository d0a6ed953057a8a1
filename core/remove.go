package core

import (
	"context"
	"io"
	"os"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/core/precond"
	"sandfs/core/quota"
)

// RemoveOptions shape a RemoveWith.
type RemoveOptions struct {
	Recursive bool // a non-empty directory with all under it
	// Pre is what the entry (not followed) must be, checked just before
	// the unlink (precondition.go).
	Pre precond.Precondition
}

// Remove deletes p, never following a final symlink (the link goes, not its
// target). A non-empty directory needs recursive, else ENOTEMPTY. Removing
// the root is EINVAL.
func (s *Sandbox) Remove(ctx context.Context, p string, recursive bool) error {
	return s.RemoveWith(ctx, p, RemoveOptions{Recursive: recursive})
}

// RemoveWith is Remove with options: a precondition on the entry.
func (s *Sandbox) RemoveWith(ctx context.Context, p string, o RemoveOptions) error {
	recursive := o.Recursive
	ap, err := s.Clean(p)
	if err != nil {
		return err
	}
	dirfd, name, err := s.root.parent(ap)
	if err != nil {
		return PathErr(OpRemove, ap, err)
	}
	defer unix.Close(dirfd)
	claim := s.watch.Claim(ap)
	defer claim.Done()
	unlock := locks.lock(ap)
	defer unlock()
	if err := checkAt(OpRemove, ap, o.Pre, dirfd, name); err != nil {
		return err
	}
	uop := s.quota.Begin()
	defer uop.End(0, 0)
	var gone quota.Count // what the remove frees (core/quota)
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		gone = s.freedBy(ctx, ap, &st)
	}
	isDir := false
	err = unix.Unlinkat(dirfd, name, 0)
	if err == unix.EISDIR || err == unix.EPERM {
		if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR {
			isDir = true
			err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
			if (err == unix.ENOTEMPTY || err == unix.EEXIST) && recursive {
				gone = s.measureFreed(ctx, dirfd, name, ap)
				err = RemoveAllAt(ctx, dirfd, name)
				if err != nil {
					s.quota.OutsideChange() // part of it went: a scan will say how much
				}
			}
			if err == unix.EEXIST {
				err = unix.ENOTEMPTY
			}
		}
	}
	if err != nil {
		return PathErr(OpRemove, ap, err)
	}
	uop.End(-gone.Bytes, -gone.Entries)
	s.Tell(ctx, journal.Remove, ap, "", isDir)
	return nil
}

// RemoveAllAt removes name in dirfd and everything under it, walking by fd
// with O_NOFOLLOW so a symlink swapped in mid-walk is unlinked, never
// followed. A name already gone is success.
func RemoveAllAt(ctx context.Context, dirfd int, name string) error {
	err := unix.Unlinkat(dirfd, name, 0)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err != unix.EISDIR && err != unix.EPERM {
		return err
	}
	for pass := 0; ; pass++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := emptyDirAt(ctx, dirfd, name); err != nil {
			return err
		}
		err = unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		if err == nil || err == unix.ENOENT {
			return nil
		}
		// Someone added entries while we emptied it: go again, a while.
		if (err != unix.ENOTEMPTY && err != unix.EEXIST) || pass >= 16 {
			return err
		}
	}
}

// emptyDirAt removes every entry of the directory name in dirfd.
func emptyDirAt(ctx context.Context, dirfd int, name string) error {
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err == unix.ENOENT {
		return nil
	}
	if err != nil {
		return err
	}
	dir := os.NewFile(uintptr(fd), name)
	defer dir.Close()
	for {
		names, rerr := dir.Readdirnames(512)
		for _, n := range names {
			if err := RemoveAllAt(ctx, fd, n); err != nil {
				return err
			}
		}
		if rerr == io.EOF || len(names) == 0 {
			return nil
		}
		if rerr != nil {
			return rerr
		}
	}
}
