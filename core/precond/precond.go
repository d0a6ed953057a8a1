// Package precond holds conditional changes' values: the Precondition a
// change expects its target in, the *Error of one refused, and the ETag
// format. It imports nothing of sandfs; core checks them (core's
// precondition.go: checkAt and the stripe locks).
//
// An ETag names one version of an entry: `"<inode>-<size>-<mtime ns>"` in
// hex (IdentityETag; core.ETag of a stat). A change with a Precondition is
// made only when the target, as it is right before the change, still has
// an ETag the caller named (IfMatch) or is still absent (IfNoneMatch).
// Otherwise the change returns an *Error carrying the current ETag and
// nothing changes: a replace removes its temp file, a move or a delete is
// not made.
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
// stripe lock of its target path (core's pathLocks), precondition or not,
// so a check and its change are atomic against every other change made
// through these calls: of two API writers holding the same ETag exactly
// one wins. The one window left is a writer outside them (a process in the
// sandbox, a write through the FUSE mount's open handles) that changes the
// file between the stat and the rename: a few microseconds, two syscalls
// with no I/O between them. Closing it would need every writer to take a
// lock the kernel does not make them take (no rename is conditional on a
// file's state), so it is as small as it can be without locks.
//
// An ETag is a stat of the file: two changes within one timestamp tick
// that keep the inode and the size are one ETag. A replace always makes a
// new inode (the temp file exists beside the old one), so replaces are
// always told apart; on Linux 6.13 and later the multigrain timestamps of
// ext4, xfs, btrfs and tmpfs tell apart in-place writes too once the mtime
// has been read (an ETag was given out).
package precond

import (
	"errors"
	"fmt"
	"strings"
)

// ErrFailed is what an *Error Is.
var ErrFailed = errors.New("precondition failed")

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

// Error is a change refused because its target is not as the
// Precondition expected.
type Error struct {
	Op, Path string // the core op and the API path checked
	Current  string // the target's ETag now; "" when it does not exist
}

func (e *Error) Error() string {
	if e.Current == "" {
		return fmt.Sprintf("%s %s: precondition failed: the file does not exist", e.Op, e.Path)
	}
	return fmt.Sprintf("%s %s: precondition failed: the current ETag is %s", e.Op, e.Path, e.Current)
}

// Is makes errors.Is(err, ErrFailed) true.
func (e *Error) Is(target error) bool { return target == ErrFailed }

// IdentityETag is the strong ETag (the format download sends) of a file
// of that inode, size and mtime (ns): each in hex, quoted; for who keeps a
// stat's identity rather than the stat.
func IdentityETag(ino uint64, size, mtimeNs int64) string {
	return fmt.Sprintf(`"%x-%x-%x"`, ino, size, mtimeNs)
}
