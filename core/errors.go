package core

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// pathErr wraps err as an *fs.PathError carrying the API path. An err that is
// already a *fs.PathError keeps its errno but takes the API path and op, so a
// host path from the os package never leaks out.
func pathErr(op, apiPath string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: apiPath, Err: errnoOf(err)}
}

// errnoOf extracts the unix.Errno inside err, or EIO when it carries none.
func errnoOf(err error) error {
	var errno unix.Errno
	if errors.As(err, &errno) {
		return errno
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return unix.ENOENT
	case errors.Is(err, fs.ErrExist):
		return unix.EEXIST
	case errors.Is(err, fs.ErrPermission):
		return unix.EACCES
	}
	return err
}

// Errno returns the errno an error from core carries, and whether it had one.
func Errno(err error) (unix.Errno, bool) {
	var errno unix.Errno
	ok := errors.As(err, &errno)
	return errno, ok
}
