package core

import (
	"context"
	"io/fs"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/core/journal"
)

// Mkdir creates the directory p. With parents it creates missing ancestors
// and an existing directory is fine (mkdir -p); without, an existing path is
// EEXIST. An existing non-directory is EEXIST either way.
func (s *Sandbox) Mkdir(ctx context.Context, p string, parents bool, mode fs.FileMode) error {
	ap, err := s.Clean(p)
	if err != nil {
		return err
	}
	perm := UnixPerm(mode)
	if perm == 0 {
		perm = 0o755
	}
	if parents {
		return s.MkdirAll(ctx, ap, perm)
	}
	dirfd, name, err := s.root.parent(ap)
	if err == unix.EINVAL { // the root
		err = unix.EEXIST
	}
	if err != nil {
		return PathErr(OpMkdir, ap, err)
	}
	defer unix.Close(dirfd)
	claim := s.watch.Claim(ap)
	defer claim.Done()
	uop := s.quota.Begin()
	defer uop.End(0, 0)
	if err := reserveEntry(&uop, dirfd, name, OpMkdir, ap); err != nil {
		return err
	}
	if err := unix.Mkdirat(dirfd, name, perm); err != nil {
		return PathErr(OpMkdir, ap, err)
	}
	if err := chownNewAt(ctx, dirfd, name); err != nil {
		unix.Unlinkat(dirfd, name, unix.AT_REMOVEDIR)
		return PathErr(OpMkdir, ap, err)
	}
	uop.End(0, 1)
	s.Tell(ctx, journal.Create, ap, "", true)
	return nil
}

// MkdirAll is mkdir -p on a clean API path, each new directory owned by
// the context's Owner and told to the journal: symlinks to directories
// inside the root count as directories, as the kernel's resolution sees
// them. It finds the deepest existing ancestor, then creates the rest
// downward, each new component opened with O_NOFOLLOW from the fd of the
// one before.
func (s *Sandbox) MkdirAll(ctx context.Context, ap string, perm uint32) error {
	return s.mkdirAllFor(ctx, ap, perm, 0)
}

// mkdirAllFor is MkdirAll for a caller that will add extra entries below
// ap: it makes no directory unless the quota has room for them too
// (core/quota), so a write refused for its own entry leaves no parents.
func (s *Sandbox) mkdirAllFor(ctx context.Context, ap string, perm uint32, extra int64) error {
	var missing []string
	cur := ap
	var fd int
	for {
		var err error
		fd, err = s.root.OpenDir(cur)
		if err == nil {
			break
		}
		if err == unix.ENOTDIR && cur == ap {
			if _, lerr := s.root.lstat(ap); lerr == nil {
				err = unix.EEXIST // the path itself is a file
			}
		}
		if err != unix.ENOENT {
			return PathErr(OpMkdir, ap, err)
		}
		dir, name := apipath.Split(cur)
		if name == "" {
			return PathErr(OpMkdir, ap, err)
		}
		missing = append(missing, name)
		cur = dir
	}
	if len(missing) == 0 {
		unix.Close(fd)
		return nil
	}
	claim := s.watch.Claim(apipath.Child(cur, missing[len(missing)-1]))
	defer claim.Done()
	uop := s.quota.Begin()
	made := int64(0)
	defer func() { uop.End(0, made) }()
	if err := uop.Reserve(OpMkdir, ap, 0, int64(len(missing))+extra); err != nil {
		unix.Close(fd)
		return err
	}
	for i := len(missing) - 1; i >= 0; i-- {
		name := missing[i]
		cur = apipath.Child(cur, name)
		err := unix.Mkdirat(fd, name, perm)
		if err != nil && err != unix.EEXIST {
			// ENOSPC, EDQUOT, EACCES…: say so, not the ENOENT of the open
			// that would follow.
			unix.Close(fd)
			return PathErr(OpMkdir, ap, err)
		}
		if err == nil {
			if cerr := chownNewAt(ctx, fd, name); cerr != nil {
				unix.Unlinkat(fd, name, unix.AT_REMOVEDIR)
				unix.Close(fd)
				return PathErr(OpMkdir, ap, cerr)
			}
		}
		next, oerr := unix.Openat(fd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if oerr != nil && err == unix.EEXIST {
			// Lost a race to another creator, or a symlink or file sits
			// there: fine only if it resolves to a directory in the root.
			next, oerr = s.root.OpenDir(cur)
			if oerr == unix.ENOENT || oerr == unix.ENOTDIR {
				oerr = unix.EEXIST
			}
		}
		unix.Close(fd)
		if oerr != nil {
			return PathErr(OpMkdir, ap, oerr)
		}
		fd = next
		if err == nil {
			made++
			s.Tell(ctx, journal.Create, cur, "", true)
		}
	}
	unix.Close(fd)
	return nil
}
