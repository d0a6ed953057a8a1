package core

import (
	"context"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/core/quota"
	"sandfs/internal/safeat"
)

// OpSetattr names failures of a change of attributes.
const OpSetattr = "setattr"

// SetAttr says which attributes a change sets (nil: unchanged).
type SetAttr struct {
	Mode         *uint32 // permission and special bits
	Uid, Gid     *int
	Size         *int64
	Atime, Mtime *unix.Timespec // unix.UTIME_NOW in Nsec for "now"
	// setidDirOnly refuses (EPERM) a Mode with set-id bits unless the file
	// is a directory, checked on the descriptor changed (setid.go).
	setidDirOnly bool
}

// setattr changes the attributes of the clean API path ap, resolved beneath
// the root with a final symlink not followed (the REST chmod and chown).
func (s *Sandbox) setattr(ctx context.Context, ap string, a SetAttr) error {
	fd, err := s.root.openPath(ap, false)
	if err != nil {
		return PathErr(OpSetattr, ap, err)
	}
	defer unix.Close(fd)
	_, err = s.changeAttrs(ctx, ap, fd, a)
	return err
}

// changeAttrs sets a on the file fd holds (O_PATH, or an open handle, which
// also serves an unlinked file and ftruncate), known as API path ap, under a
// claim, and returns its stat after. A size change is told as write,
// anything else as chmod. The REST routes and the mirror (Dir.Setattr)
// both change attributes through it.
func (s *Sandbox) changeAttrs(ctx context.Context, ap string, fd int, a SetAttr) (unix.Stat_t, error) {
	return s.changeAttrsOf(ctx, ap, fd, a, nil)
}

// changeAttrsOf is changeAttrs on a file whose open inode (core/quota)
// the caller may have: a size change reserves its growth first.
func (s *Sandbox) changeAttrsOf(ctx context.Context, ap string, fd int, a SetAttr, oi *quota.Inode) (_ unix.Stat_t, err error) {
	var st unix.Stat_t
	defer s.quota.MayCopyUp() // it may have copied a fork's lower file up, failed or not (core/quota, "Forks")
	claim, echo := s.claimAttrs(ap, a)
	defer func() {
		if echo && serrOrDir(err, &st) {
			claim.NoEcho()
		}
		if echo {
			claim.DoneEcho()
		} else {
			claim.Done()
		}
	}()
	if a.Mode != nil {
		if a.setidDirOnly {
			if err := unix.Fstat(fd, &st); err != nil {
				return st, PathErr(OpSetattr, ap, err)
			}
			if st.Mode&unix.S_IFMT != unix.S_IFDIR {
				return st, setidErr(OpSetattr, ap)
			}
		}
		if err := safeat.Chmod(fd, *a.Mode&0o7777); err != nil {
			return st, PathErr(OpSetattr, ap, err)
		}
	}
	if a.Uid != nil || a.Gid != nil {
		uid, gid := a.owner()
		if err := safeat.Chown(fd, uid, gid); err != nil {
			return st, PathErr(OpSetattr, ap, err)
		}
	}
	if a.Size != nil {
		// Truncate through a writable fd opened on the same inode.
		wfd, err := safeat.Reopen(fd, unix.O_WRONLY|unix.O_NONBLOCK)
		if err != nil {
			return st, PathErr(OpSetattr, ap, err)
		}
		err = s.truncate(ap, wfd, *a.Size, oi)
		unix.Close(wfd)
		if err != nil {
			return st, PathErr(OpSetattr, ap, err)
		}
	}
	if a.Atime != nil || a.Mtime != nil {
		if err := safeat.Utimes(fd, a.times()); err != nil {
			return st, PathErr(OpSetattr, ap, err)
		}
	}
	serr := unix.Fstat(fd, &st)
	stp := &st
	if serr != nil {
		stp = nil
	}
	if a.Size != nil {
		s.tellStat(ctx, journal.Write, ap, "", false, stp)
	}
	if a.Mode != nil || a.Uid != nil || a.Gid != nil || a.Atime != nil || a.Mtime != nil {
		s.tellStat(ctx, journal.Chmod, ap, "", false, stp)
	}
	if serr != nil {
		return st, PathErr(OpSetattr, ap, serr)
	}
	return st, nil
}

// claimAttrs opens the claim of a change of attributes a of ap, and says
// whether it may end at its own echo. A change of one attribute (a mode,
// an owner, both times: one syscall, no truncate) of a file that is not a
// directory makes exactly one echo, the IN_ATTRIB of ap in its parent's
// watch, so the claim ends when the reader has read it, with no
// sentinel: tar and git set an owner, a mode or the times of nearly every
// file they make, each in a request of its own, and a sentinel costs an
// fchmodat and one more event for the reader. Two syscalls may make one event or
// two (inotify merges an event into the same one at the queue's tail), so
// they end by a sentinel, as does a truncate (its reopen and ftruncate
// echo as writes). Whether the file is a directory (its own watch hears
// the change too) is known only from the stat after: changeAttrsOf then
// ends the claim by a sentinel.
func (s *Sandbox) claimAttrs(ap string, a SetAttr) (*Claim, bool) {
	calls := 0
	if a.Mode != nil {
		calls++
	}
	if a.Uid != nil || a.Gid != nil {
		calls++
	}
	if a.Atime != nil || a.Mtime != nil {
		calls++
	}
	// The kernel tells a change of one time alone as IN_MODIFY or
	// IN_ACCESS (fsnotify_change), not IN_ATTRIB.
	oneTime := (a.Atime == nil) != (a.Mtime == nil)
	if calls == 1 && !oneTime && a.Size == nil && !a.setidDirOnly {
		return s.watch.ClaimEcho(ap, journal.Chmod), true
	}
	return s.watch.Claim(ap), false
}

// serrOrDir reports whether a change of attributes that returned err left
// no stat of a file other than a directory in st: its echo is not sure to
// be the one IN_ATTRIB of its name (claimAttrs).
func serrOrDir(err error, st *unix.Stat_t) bool {
	return err != nil || st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// owner is the uid and gid a sets, -1 for those it leaves.
func (a SetAttr) owner() (uid, gid int) {
	uid, gid = -1, -1
	if a.Uid != nil {
		uid = *a.Uid
	}
	if a.Gid != nil {
		gid = *a.Gid
	}
	return uid, gid
}

// times is the atime and mtime a sets, UTIME_OMIT for those it leaves.
func (a SetAttr) times() []unix.Timespec {
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
	if a.Atime != nil {
		ts[0] = *a.Atime
	}
	if a.Mtime != nil {
		ts[1] = *a.Mtime
	}
	return ts
}

// truncate is ftruncate(2) of the open file fd, its growth reserved first.
func (s *Sandbox) truncate(ap string, fd int, size int64, oi *quota.Inode) error {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	p := s.quota.BeginInPlace(&st, oi)
	defer p.End(fd)
	if err := p.GrowTo(OpSetattr, ap, size); err != nil {
		return err
	}
	return unix.Ftruncate(fd, size)
}
