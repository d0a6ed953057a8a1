package core

import (
	"hash/maphash"
	"slices"
	"sync"

	"golang.org/x/sys/unix"

	"sandfs/core/precond"
)

// Conditional changes: the rule and the values are package precond's
// (core/precond); here are the check (checkAt) and the stripe locks every
// final step of a change holds (pathLocks).

// ETag is the strong ETag of the file info describes (the format download
// sends): inode, size and mtime in nanoseconds, in hex, quoted.
func ETag(info Info) string {
	return precond.IdentityETag(info.Inode, info.Size, info.ModTime.UnixNano())
}

// statETag is ETag of a stat.
func statETag(st *unix.Stat_t) string { return precond.IdentityETag(st.Ino, st.Size, st.Mtim.Nano()) }

// checkAt checks pre against the entry name in dirfd (not followed), for
// the op on API path ap.
func checkAt(op, ap string, pre precond.Precondition, dirfd int, name string) error {
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
	return &precond.Error{Op: op, Path: ap, Current: cur}
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
