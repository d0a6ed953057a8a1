package watch

import (
	"log/slog"
	"os"
	"sandfs/internal/dirent"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// The ledger's control directories ("sandfs-ctl-<random>", one per kernel
// watch) are made in a shared temp directory (ctlParent: /dev/shm) and
// removed when their watch ends. A daemon killed (kill -9, a crash, the
// OOM killer) leaves its own behind, with its slot files, and a host whose
// daemon restarts often would gather them without bound. So the ledger
// holds an flock on its control directory for as long as it uses it
// (setCtlDir), the kernel drops that lock when the process dies however it
// dies, and the first kernel watch of a process sweeps the parent once
// (sweepControlDirs): a control directory nobody holds a lock on is
// removed.
//
// The parent is shared with every user of the host, so the sweep trusts
// nothing in it: it opens each candidate with O_NOFOLLOW beneath the
// parent's descriptor (a symlink of that name is left alone), removes only
// a directory owned by the daemon's own uid (another user's, or one
// planted by another user, is never touched) that holds only files (no
// recursion, nothing followed), and only one older than ctlSweepAge, since
// a directory just made is locked a moment after its mkdir. The directory
// is 0700 and the parent sticky, so once it is found ours and unlocked, no
// other user can swap what is inside it or it. A daemon of an older build,
// which took no lock, loses its directory to the sweep: its sentinels then
// fail and its claims close at once (a duplicate event, never a lost one).

// ctlPrefix starts the name of every control directory.
const ctlPrefix = "sandfs-ctl-"

// ctlSweepAge is how old an unlocked control directory must be to be
// swept.
const ctlSweepAge = time.Minute

var ctlSweep sync.Once

// sweepControlDirsOnce sweeps ctlParent in the background, once per
// process.
func sweepControlDirsOnce(log *slog.Logger) {
	ctlSweep.Do(func() {
		go func() {
			if n := sweepControlDirs(ctlParent(), ctlSweepAge, uint32(os.Geteuid()), time.Now()); n > 0 {
				log.Info("removed control directories of daemons gone", "dir", ctlParent(), "removed", n)
			}
		}()
	})
}

// ctlParent is where the control directory goes: a tmpfs (/dev/shm) where
// there is one, so a sentinel is a name in memory and not a journaled
// change on the disk the root may share, else the temp directory.
func ctlParent() string {
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC && unix.Access("/dev/shm", unix.W_OK) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

// lockCtlDir takes the lock that says the control directory open at fd is
// in use (held until fd is closed).
func lockCtlDir(fd int) error {
	return unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
}

// sweepControlDirs removes from parent every control directory owned by
// uid, last changed before now-minAge, that nobody holds locked, and
// returns how many it removed.
func sweepControlDirs(parent string, minAge time.Duration, uid uint32, now time.Time) int {
	pfd, err := unix.Open(parent, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0
	}
	defer unix.Close(pfd)
	names, err := dirent.Names(pfd)
	if err != nil {
		return 0
	}
	removed := 0
	for _, name := range names {
		if strings.HasPrefix(name, ctlPrefix) && sweepControlDir(pfd, name, now.Add(-minAge), uid) {
			removed++
		}
	}
	return removed
}

// sweepControlDir removes the control directory name of the parent at pfd
// when it is a directory of uid's, unchanged since before, unlocked, and
// holding nothing but files.
func sweepControlDir(pfd int, name string, before time.Time, uid uint32) bool {
	fd, err := unix.Openat(pfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return false // a symlink (ELOOP), not a directory, gone
	}
	defer unix.Close(fd) // and with it the lock taken below
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Uid != uid || !time.Unix(st.Mtim.Unix()).Before(before) {
		return false
	}
	if lockCtlDir(fd) != nil {
		return false // a live daemon's
	}
	names, err := dirent.Names(fd)
	if err != nil {
		return false
	}
	for _, n := range names {
		if unix.Unlinkat(fd, n, 0) != nil {
			return false // a directory inside (EISDIR): not one of ours to judge
		}
	}
	return unix.Unlinkat(pfd, name, unix.AT_REMOVEDIR) == nil
}
