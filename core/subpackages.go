package core

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

// Paths and errors: PathErr, ErrnoOf (errors.go), Unreportable (names.go),
// InfoFrom, FileMode (info.go), NotRegular (errors.go).

// Descriptor primitives, one name in a directory fd, never followed:
// OpenBelow, OpenSubdir, LstatAt (internal/xdev),
// Readlinkat (resolve.go), MkdirOpen (copy.go), RemoveAllAt (remove.go),
// RenameNoReplace (move.go), TempName (write.go), IsTempName (sweep.go),
// Fill (copybuf.go); internal/dirent lists a directory.

// The journal:

// Tell (actor.go) is how a subpackage tells a change it made.

// Usage is Sandbox.Quota's (core/quota, usage.go); du.Measurer counts
// a subtree the way usage does.
