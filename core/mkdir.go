package core

import (
	"context"
	"io/fs"

	"golang.org/x/sys/unix"
)

// Mkdir creates the directory p. With parents it creates missing ancestors
// and an existing directory is fine (mkdir -p); without, an existing path is
// EEXIST. An existing non-directory is EEXIST either way.
func (s *Sandbox) Mkdir(ctx context.Context, p string, parents bool, mode fs.FileMode) error {
	ap, err := s.Clean(p)
	if err != nil {
		return err
	}
	perm := unixPerm(mode)
	if perm == 0 {
		perm = 0o755
	}
	if parents {
		return s.mkdirAll(ap, perm)
	}
	dirfd, name, err := s.parent(ap)
	if err == unix.EINVAL { // the root
		err = unix.EEXIST
	}
	if err != nil {
		return pathErr(OpMkdir, ap, err)
	}
	defer unix.Close(dirfd)
	return pathErr(OpMkdir, ap, unix.Mkdirat(dirfd, name, perm))
}

// mkdirAll is mkdir -p on a clean API path: symlinks to directories inside
// the root count as directories, as the kernel's resolution sees them.
func (s *Sandbox) mkdirAll(ap string, perm uint32) error {
	fd, err := s.openDir(ap)
	if err == nil {
		unix.Close(fd)
		return nil
	}
	if err == unix.ENOTDIR {
		if _, lerr := s.lstat(ap); lerr == nil {
			err = unix.EEXIST // the path itself is a file
		}
		return pathErr(OpMkdir, ap, err)
	}
	if err != unix.ENOENT {
		return pathErr(OpMkdir, ap, err)
	}
	dir, name := split(ap)
	if name == "" {
		return pathErr(OpMkdir, ap, err)
	}
	if err := s.mkdirAll(dir, perm); err != nil {
		return err
	}
	dirfd, err := s.openDir(dir)
	if err != nil {
		return pathErr(OpMkdir, ap, err)
	}
	defer unix.Close(dirfd)
	err = unix.Mkdirat(dirfd, name, perm)
	if err == unix.EEXIST {
		// Lost a race to another creator, or a dangling symlink or a file
		// sits there: fine only if it resolves to a directory now.
		if fd, err2 := s.openDir(ap); err2 == nil {
			unix.Close(fd)
			return nil
		}
	}
	return pathErr(OpMkdir, ap, err)
}
