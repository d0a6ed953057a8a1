package core

import (
	"context"
	"sync"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/core/du"
	"sandfs/core/quota"
	"sandfs/internal/xdev"
)

// A fork's usage is its overlay's upper (Options.Upper; core/quota,
// "Forks"): the scan walks it, and a removal or a replace frees what the
// upper holds at the name (upperCount), since the merged view would free
// lower bytes the fork never counted.
//
// In an overlay's upper some names
// are the overlay's bookkeeping rather than content the sandbox wrote:
//
//   - A whiteout (a character device 0:0) marks a lower name deleted. It
//     weighs nothing, no bytes and no entry: it takes a name away from the
//     sandbox's tree, and there are never more of them than the lower's
//     names, which count once, against the state's bound.
//   - A metacopy file (trusted.overlay.metacopy: a chmod, chown or touch
//     of a lower file copied up its metadata only) is an entry of no
//     bytes: its data is still the lower's, though its size is the
//     lower's. Only the xattr tells it from a file the sandbox wrote (its
//     blocks may be an xattr block's), so the walk asks each regular file
//     of a size.
//   - An opaque directory (one the sandbox made where a lower one was
//     removed) and a directory copied up to hold a changed name are
//     entries like any directory the upper holds.

// upperCount is what removing the name at API path ap frees in a fork:
// what its upper holds there, all under it included, weighed as the scan
// weighs it (nothing when only the lower has it: the removal leaves a
// whiteout). ok is false for a sandbox with no upper, and when the upper
// cannot say (a symlink on the way: the caller then counts as elsewhere,
// and the scan after the change settles it).
//
// A regular file the fork made is counted exactly by the Ops, so it frees
// its size. One copied up from the lower (the overlay keeps the lower's
// inode number in the merged stat, merged; the upper's own differs) was
// counted whole only by a scan after the copy-up: it frees as a file an
// outside writer changed (quota.State.FreedBy), nothing while a scan is
// pending and it is newer than the last, so usage does not drop below
// what was counted.
//
// exact says more: the upper holds the name's directory (a replace there
// copies no directory up) and c is exactly what it holds at the name (no
// file copied up, whose count is a guess), so a replace's Op is exact
// (quota.Op.EndExact).
func (s *Sandbox) upperCount(ctx context.Context, ap string, merged *unix.Stat_t) (c quota.Count, ok, exact bool) {
	if s.upper == nil || ap == "/" {
		return c, false, false
	}
	if c, ok := s.upperMade.count(merged); ok {
		return c, true, true
	}
	s.upperDir.with(s.upper, func(up int) {
		c, ok, exact = s.upperCountIn(ctx, up, ap, merged)
	})
	return c, ok, exact
}

func (s *Sandbox) upperCountIn(ctx context.Context, up int, ap string, merged *unix.Stat_t) (c quota.Count, ok, exact bool) {
	dir, name := apipath.Split(ap)
	fd, err := unix.Openat2(up, rel(dir), &unix.OpenHow{Flags: unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV})
	if err == unix.ENOENT || err == unix.ENOTDIR {
		return c, true, false // the directory is the lower's alone, so is the name
	}
	if err != nil {
		return c, false, false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if _, err := xdev.LstatAt(fd, name, &st); err == unix.ENOENT {
		return c, true, true
	} else if err != nil {
		return c, false, false
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && st.Nlink > 1 {
		return quota.Count{Entries: 1}, true, false // one link of several frees no bytes (quota.State.FreedBy)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFREG && merged != nil && merged.Ino == st.Ino {
		// Made in the upper, not copied up: the upper and lower share the
		// state's filesystem, so a copy-up keeps the lower's inode number
		// in the merged stat (across remounts too, by its origin xattr).
		// Never a metacopy file, so no open to ask for its xattr: a third
		// of what this count costs a PUT.
		s.upperMade.add(st.Ino)
		return quota.Count{Entries: 1, Bytes: st.Size}, true, true
	}
	m := du.NewMeasurer(ctx)
	m.Upper = true
	c, _ = m.Entry(fd, name, &st)
	if c.Bytes > 0 && merged != nil && merged.Ino != st.Ino && st.Mode&unix.S_IFMT == unix.S_IFREG {
		c.Bytes = s.quota.FreedBy(&st)
	}
	return c, true, false
}

// upperHeld is a fork's upper directory opened once: every replace and
// removal in a fork asks upperCount, and opening the upper by its path
// each time cost each of them two opens. The descriptor is used under the
// read lock and closed under the write lock, so Close never closes it
// under a user (its number, reused, would be another directory).
type upperHeld struct {
	mu     sync.RWMutex
	fd     int // -1 until opened, and once closed
	closed bool
}

// with runs f on the upper's descriptor, opened by open the first time
// (and again after a failed open); it does nothing when the upper cannot
// be opened or the sandbox is closed.
func (u *upperHeld) with(open func() (int, error), f func(up int)) {
	u.mu.RLock()
	if u.fd < 0 && !u.closed {
		u.mu.RUnlock()
		u.mu.Lock()
		if u.fd < 0 && !u.closed {
			if fd, err := open(); err == nil {
				u.fd = fd
			}
		}
		u.mu.Unlock()
		u.mu.RLock()
	}
	defer u.mu.RUnlock()
	if u.fd >= 0 {
		f(u.fd)
	}
}

func (u *upperHeld) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.fd >= 0 {
		unix.Close(u.fd)
	}
	u.fd, u.closed = -1, true
}

// freedBy is what removing the name at API path ap, of stat st, frees:
// its bytes as quota.State.FreedBy counts them and its entry; in a fork,
// what its upper holds there.
func (s *Sandbox) freedBy(ctx context.Context, ap string, st *unix.Stat_t) quota.Count {
	c, _ := s.replacing(ctx, ap, st)
	return c
}

// replacing is what writing the name at API path ap by replace frees (st:
// its stat, nil when there is none), and whether the write's Op is then
// exact (upperCount): always in a sandbox that is no fork, whose Ops see
// the counted tree itself.
func (s *Sandbox) replacing(ctx context.Context, ap string, st *unix.Stat_t) (quota.Count, bool) {
	if c, ok, exact := s.upperCount(ctx, ap, st); ok {
		return c, exact
	}
	if st == nil {
		return quota.Count{}, s.upper == nil
	}
	return quota.Count{Bytes: s.quota.FreedBy(st), Entries: 1}, s.upper == nil
}

// measureFreed is what removing name in dirfd (API path ap) and all under
// it frees: measureAt's count; in a fork, what its upper holds there.
func (s *Sandbox) measureFreed(ctx context.Context, dirfd int, name, ap string) quota.Count {
	if c, ok, _ := s.upperCount(ctx, ap, nil); ok {
		return c
	}
	return du.MeasureAt(ctx, dirfd, name)
}
