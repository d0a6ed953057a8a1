package core

import (
	"context"
	"io"
	"io/fs"

	"golang.org/x/sys/unix"
)

// What core's subpackages (grep, tar, changes, checkpoint) need of its
// internals, and nothing more: each is a thin name for the function core
// uses itself, so a subpackage confines, names, counts and tells its
// changes exactly as core's own operations do, and never keeps a copy of
// that code. Nothing outside core's subpackages should call these.

// Resolution beneath the root is Root's (root.go).

// Operations: MkdirAll (mkdir.go), KeptMode (setid.go).

// Limits are the sandbox's limits, defaults filled in.
func (s *Sandbox) Limits() Limits { return s.limits }

// CheckpointMaxSize is Options.CheckpointMaxSize.
func (s *Sandbox) CheckpointMaxSize() int64 { return s.cpMax }

// Paths and errors:

// PathErr wraps err as an *fs.PathError carrying the API path and a
// unix.Errno; a host path never leaks out in it (errors.go).
func PathErr(op, apiPath string, err error) error { return pathErr(op, apiPath, err) }

// Unreportable reports whether a walk leaves name out, counting it in the
// SkippedNames of ctx (names.go).
func Unreportable(ctx context.Context, name string) bool { return unreportable(ctx, name) }

// Descriptor primitives: one name in a directory fd, never followed:

// OpenBelow opens the directory relPath below dirfd (O_PATH), following no
// symlink and no "..": the strict resolution (resolve_strict.go).
func OpenBelow(dirfd int, relPath string) (int, error) { return openBelow(dirfd, relPath) }

// OpenSubdir opens the directory name in dirfd for a walk: never through a
// symlink, never into another mount (EXDEV; xdev.go).
func OpenSubdir(dirfd int, name string) (int, error) { return openSubdir(dirfd, name) }

// LstatAt stats name in dirfd without following it or asking a mount's
// server, and says whether it is the root of a mount (xdev.go).
func LstatAt(dirfd int, name string, st *unix.Stat_t) (mount bool, err error) {
	return lstatAt(dirfd, name, st)
}

// Readlinkat reads a symlink's target whatever its length.
func Readlinkat(dirfd int, name string) (string, error) { return readlinkat(dirfd, name) }

// MkdirOpen makes the directory name in dirfd (mode 0700) and opens it
// O_PATH|O_NOFOLLOW, refusing one this process did not make (copy.go).
func MkdirOpen(dirfd int, name string) (int, error) { return mkdirOpen(dirfd, name) }

// RemoveAllAt removes name in dirfd and everything under it, by fd, never
// following a symlink (remove.go).
func RemoveAllAt(ctx context.Context, dirfd int, name string) error {
	return removeAllAt(ctx, dirfd, name)
}

// RenameNoReplace is renameat2(RENAME_NOREPLACE), with a fallback where
// the filesystem lacks the flag (move.go).
func RenameNoReplace(fdir int, fname string, tdir int, tname string) error {
	return renameNoReplace(fdir, fname, tdir, tname)
}

// TempName is a fresh ".sandfs-<16 hex>.part", the name every temp file
// and stage of core has (write.go).
func TempName() string { return tempName() }

// DirNames lists the directory open at fd (on a dup, so fd stays open).
func DirNames(fd int) ([]string, error) { return dirNames(fd) }

// IsTempName reports whether name is one of core's temp names (sweep.go).
func IsTempName(name string) bool { return isTempName(name) }

// NotRegular reports whether a stat(2) mode is neither a regular file, a
// directory nor a symlink: a FIFO, socket or device (errors.go).
func NotRegular(mode uint32) bool { return notRegular(mode) }

// FileMode converts a stat(2) mode to an fs.FileMode as the os package
// does.
func FileMode(m uint32) fs.FileMode { return fileMode(m) }

// InfoFrom describes the file of stat st at the API path.
func InfoFrom(apiPath string, st *unix.Stat_t) Info { return infoFrom(apiPath, st) }

// Fill reads r into buf until buf is full or r fails (copybuf.go).
func Fill(r io.Reader, buf []byte) (int, error) { return fill(r, buf) }

// ErrnoOf extracts the unix.Errno inside err (a *QuotaError or
// *StateError kept whole, as it says why), or maps the fs sentinel it
// wraps to its errno (errors.go).
func ErrnoOf(err error) error { return errnoOf(err) }

// The journal:

// Tell (actor.go) is how a subpackage tells a change it made.

// Usage is Sandbox.Quota's (core/quota, usage.go).

// Measurer counts subtrees the way usage does: each regular file's inode
// once.
type Measurer struct{ m *measurer }

// NewMeasurer is a Measurer that stops when ctx ends.
func NewMeasurer(ctx context.Context) *Measurer { return &Measurer{m: newMeasurer(ctx)} }

// Entry counts name in dirfd and all under it.
func (m *Measurer) Entry(dirfd int, name string) (bytes, entries int64, err error) {
	u, err := m.m.entry(dirfd, name, nil)
	return u.Bytes, u.Entries, err
}

// Dir counts the entries under the open directory fd (not itself), and
// closes fd.
func (m *Measurer) Dir(fd int) (bytes, entries int64, err error) {
	u, err := m.m.dir(fd)
	return u.Bytes, u.Entries, err
}
