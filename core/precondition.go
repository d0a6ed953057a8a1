package core

import (
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Conditional changes.
//
// An ETag names one version of an entry: `"<inode>-<size>-<mtime ns>"` in
// hex (ETag). A change with a Precondition is made only when the target, as
// it is right before the change, still has an ETag the caller named
// (IfMatch) or is still absent (IfNoneMatch). Otherwise the change returns
// a *PreconditionError carrying the current ETag and nothing changes: a
// replace removes its temp file, a move or a delete is not made.
//
// The check is as late as it can be: for a replace (WriteFile, Upload, a
// Copy over a destination), after the new content is written and synced
// to its temp file and just before the rename; for a Move and a Remove,
// just before the rename or unlink; for WriteInPlace, on the opened file
// itself before it is truncated. The target is stat'ed by name beneath the
// directory fd the change then uses, never following a symlink.
//
// Every such final step of core (the rename of WriteFile, Upload, Copy and
// Move, the unlink of Remove, the whole write of WriteInPlace) holds the
// stripe lock of its target path (pathLocks), precondition or not, so a
// check and its change are atomic against every other change made through
// these calls: of two API writers holding the same ETag exactly one wins.
// The one window left is a writer outside them (a process in the sandbox,
// a write through the FUSE mount's open handles) that changes the file
// between the stat and the rename: a few microseconds, two syscalls with
// no I/O between them. Closing it would need every writer to take a lock
// the kernel does not make them take (no rename is conditional on a
// file's state), so it is as small as it can be without locks.
//
// An ETag is a stat of the file: two changes within one timestamp tick
// that keep the inode and the size are one ETag. A replace always makes a
// new inode (the temp file exists beside the old one), so replaces are
// always told apart; on Linux 6.13 and later the multigrain timestamps of
// ext4, xfs, btrfs and tmpfs tell apart in-place writes too once the mtime
// has been read (an ETag was given out).

// ErrPrecondition is what a *PreconditionError Is.
var ErrPrecondition = errors.New("precondition failed")

// Precondition is the state a change expects its target in. The zero value
// expects nothing.
type Precondition struct {
	// IfMatch: the target exists and its ETag is one of these ("*": any;
	// a weak "W/" prefix is ignored).
	IfMatch []string
	// IfNoneMatch: the target does not exist (If-None-Match: *).
	IfNoneMatch bool
}

// Set reports whether p expects anything.
func (p Precondition) Set() bool { return len(p.IfMatch) > 0 || p.IfNoneMatch }

// Holds reports whether a target whose ETag is current ("" when absent)
// meets p.
func (p Precondition) Holds(current string) bool {
	if p.IfNoneMatch && current != "" {
		return false
	}
	if len(p.IfMatch) == 0 {
		return true
	}
	if current == "" {
		return false
	}
	for _, t := range p.IfMatch {
		if t == "*" || t == current || strings.TrimPrefix(t, "W/") == current {
			return true
		}
	}
	return false
}

// PreconditionError is a change refused because its target is not as the
// Precondition expected.
type PreconditionError struct {
	Op, Path string // the core op and the API path checked
	Current  string // the target's ETag now; "" when it does not exist
}

func (e *PreconditionError) Error() string {
	if e.Current == "" {
		return fmt.Sprintf("%s %s: precondition failed: the file does not exist", e.Op, e.Path)
	}
	return fmt.Sprintf("%s %s: precondition failed: the current ETag is %s", e.Op, e.Path, e.Current)
}

// Is makes errors.Is(err, ErrPrecondition) true.
func (e *PreconditionError) Is(target error) bool { return target == ErrPrecondition }

// ETag is the strong ETag of the file info describes (the format download
// sends): inode, size and mtime in nanoseconds, in hex, quoted.
func ETag(info Info) string { return IdentityETag(info.Inode, info.Size, info.ModTime.UnixNano()) }

// IdentityETag is the ETag of a file of that inode, size and mtime (ns),
// for who keeps a stat's identity rather than the stat.
func IdentityETag(ino uint64, size, mtimeNs int64) string {
	return fmt.Sprintf(`"%x-%x-%x"`, ino, size, mtimeNs)
}

// statETag is ETag of a stat.
func statETag(st *unix.Stat_t) string { return IdentityETag(st.Ino, st.Size, st.Mtim.Nano()) }

// checkAt checks pre against the entry name in dirfd (not followed), for
// the op on API path ap.
func checkAt(op, ap string, pre Precondition, dirfd int, name string) error {
	if !pre.Set() {
		return nil
	}
	cur := ""
	var st unix.Stat_t
	switch err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); {
	case err == nil:
		cur = statETag(&st)
	case err != unix.ENOENT:
		return PathErr(op, ap, err)
	}
	if pre.Holds(cur) {
		return nil
	}
	return &PreconditionError{Op: op, Path: ap, Current: cur}
}

// pathLocks serialise the final step of core's changes per target API
// path: 256 stripes shared by the daemon's sandboxes, so unrelated paths
// rarely wait on each other (and then only for a syscall or two).
type pathLocks struct {
	seed    maphash.Seed
	stripes [256]sync.Mutex
}

var locks = pathLocks{seed: maphash.MakeSeed()}

// lock takes the stripes of the API paths given (in stripe order, so two
// callers never deadlock) and returns their release.
func (l *pathLocks) lock(paths ...string) func() {
	idx := make([]int, 0, len(paths))
	for _, p := range paths {
		i := int(maphash.String(l.seed, p) % uint64(len(l.stripes)))
		if !slices.Contains(idx, i) {
			idx = append(idx, i)
		}
	}
	slices.Sort(idx)
	for _, i := range idx {
		l.stripes[i].Lock()
	}
	return func() {
		for j := len(idx) - 1; j >= 0; j-- {
			l.stripes[idx[j]].Unlock()
		}
	}
}
