package core

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// Set-id bits. The daemon runs as root for callers who are not: a setuid
// or setgid program it makes for them is a way to root (setuid root), or
// to any account or group (setgid shadow, docker, disk). So, unless the
// Sandbox was opened with Options.AllowSetid (serve --allow-setid), no
// operation of the API makes a non-directory setuid or setgid:
//
//   - asked for, it is refused with EPERM and nothing changes: Chmod of a
//     non-directory (or any recursive Chmod) with a mode that has S_ISUID
//     or S_ISGID; WriteFile and WriteInPlace with such a Mode;
//   - inherited, the bits are dropped: a file replaced or written in place
//     by WriteFile, WriteInPlace or Upload keeps its mode less setuid and
//     setgid (as the kernel drops them when anyone but root writes), a
//     PreserveAttrs copies the source's mode less them, and tar entries
//     never carry them (package tar keeps permission bits only).
//
// Copy drops setuid and setgid whatever the option, as GNU cp does without
// --preserve. Setgid on a directory is group inheritance, not privilege,
// and stays allowed. The FUSE mirror is not the API: there the kernel
// checks the caller's own rights (default_permissions), as on any
// filesystem, and a file is the caller's.
const setidBits = unix.S_ISUID | unix.S_ISGID

// KeptMode is an inherited mode of a non-directory, less the set-id bits
// unless the sandbox allows them.
func (s *Sandbox) KeptMode(mode uint32) uint32 {
	if s.allowSetid {
		return mode
	}
	return mode &^ setidBits
}

// refusesSetid reports whether the Sandbox refuses an asked-for mode on a
// non-directory.
func (s *Sandbox) refusesSetid(mode uint32) bool {
	return !s.allowSetid && mode&setidBits != 0
}

// ErrSetid is why an operation that asks for a setuid or setgid
// non-directory failed; it unwraps to EPERM (the boundary's 403).
var ErrSetid error = setidError{}

type setidError struct{}

func (setidError) Error() string {
	return "setuid and setgid bits on files are refused: the daemon was not started with --allow-setid"
}
func (setidError) Unwrap() error { return unix.EPERM }

// setidErr is the error of op on the API path ap refused for its set-id bits.
func setidErr(op, ap string) error { return &fs.PathError{Op: op, Path: ap, Err: ErrSetid} }
