package fusefs

import (
	"errors"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// toErrno is the one translation of the mirror's errors into what the
// kernel is told. It unwraps (core wraps every errno in an *fs.PathError,
// which go-fuse's fs.ToErrno would turn into ENOSYS); an error carrying no
// errno is logged and told as EIO.
func (m *Mirror) toErrno(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var errno unix.Errno
	if errors.As(err, &errno) {
		return syscall.Errno(errno)
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return syscall.ENOENT
	case errors.Is(err, fs.ErrExist):
		return syscall.EEXIST
	case errors.Is(err, fs.ErrPermission):
		return syscall.EACCES
	}
	m.log.Error("fuse: unexpected error, told as EIO", "err", err)
	return syscall.EIO
}
