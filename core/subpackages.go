package core

import "context"

// What core's subpackages (grep, tar, changes, checkpoint, quota) need of
// its internals, and nothing more: each is a thin name for the function
// core uses itself, so a subpackage confines, names and reports errors
// exactly as core does, and never keeps a copy of that code.

// OpenBeneath opens the API path beneath the root fd, confined as every
// core operation is (resolve.go); flags are open(2)'s.
func (s *Sandbox) OpenBeneath(apiPath string, flags int, mode uint32) (int, error) {
	return s.openBeneath(apiPath, flags, mode)
}

// PathErr wraps err as an *fs.PathError carrying the API path and a
// unix.Errno; a host path never leaks out in it (errors.go).
func PathErr(op, apiPath string, err error) error { return pathErr(op, apiPath, err) }

// ChildOf is the API path of name in the directory dir, not cleaned.
func ChildOf(dir, name string) string { return childOf(dir, name) }

// OpenSubdir opens the directory name in dirfd for a walk: never through a
// symlink, never into another mount (EXDEV; xdev.go).
func OpenSubdir(dirfd int, name string) (int, error) { return openSubdir(dirfd, name) }

// Unreportable reports whether a walk leaves name out, counting it in the
// SkippedNames of ctx (names.go).
func Unreportable(ctx context.Context, name string) bool { return unreportable(ctx, name) }
