package core

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// PathErr wraps err as an *fs.PathError carrying the API path. An err that is
// already a *fs.PathError keeps its errno but takes the API path and op, so a
// host path from the os package never leaks out.
func PathErr(op, apiPath string, err error) error {
	if err == nil {
		return nil
	}
	return &fs.PathError{Op: op, Path: apiPath, Err: ErrnoOf(err)}
}

// ErrnoOf extracts the unix.Errno inside err, or maps the fs sentinel it
// wraps (not exist, exist, permission) to its errno; any other err is
// returned unchanged.
func ErrnoOf(err error) error {
	var qe *QuotaError
	if errors.As(err, &qe) {
		return qe // ENOSPC that says which bound (core/quota)
	}
	var se *StateError
	if errors.As(err, &se) {
		return se // ENOSPC that says why (statefull.go)
	}
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

// specialErr turns the errnos open(2) gives for the bytes of a node that
// has none, a unix socket (ENXIO), a FIFO with no reader on a
// non-blocking write open (ENXIO) or a device with no driver (ENXIO,
// ENODEV), into the EINVAL core answers for every FIFO, socket and device.
func specialErr(err error) error {
	if errors.Is(err, unix.ENXIO) || errors.Is(err, unix.ENODEV) {
		return unix.EINVAL
	}
	return err
}

// NotRegular is EINVAL for an existing node that is neither a regular file
// nor a directory (FIFO, socket, device): an operation that replaces a
// file's bytes refuses it rather than swapping the node for a file.
func NotRegular(mode uint32) bool {
	switch mode & unix.S_IFMT {
	case unix.S_IFREG, unix.S_IFDIR, unix.S_IFLNK:
		return false
	}
	return true
}
