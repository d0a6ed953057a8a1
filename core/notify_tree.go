package core

import (
	"context"
	"errors"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// Placing the kernel watch on a tree: a watch per directory, each through
// the descriptor the walk holds of it (doc.go, "The kernel watch").

// Which entries a walk of a newly watched tree tells as created.
var (
	tellNone func(Info) bool                   // nil: tell nothing, the quiet walk (addQuiet)
	tellAll  = func(Info) bool { return true } // a directory that arrived with contents
)

// tellSince tells the entries changed since t: after a directory rename, the
// files made in it between the rename and its new watch (a rename sets the
// moved directory's ctime, and a new file's ctime is no older).
func tellSince(t time.Time) func(Info) bool {
	return func(e Info) bool { return !e.Ctime.Before(t) }
}

// addTree watches the directory ap and every directory under it, telling as
// created the entries tell picks.
func (n *notifier) addTree(ap string, tell func(Info) bool) {
	if tell == nil {
		n.addQuiet(ap, false)
		return
	}
	if !n.addWatch(ap) {
		return
	}
	entries, _, err := n.s.List(context.Background(), ap, 0)
	if err != nil {
		return
	}
	for _, e := range entries {
		if tell(e) {
			if len(n.scanned) > journal.BufferSize {
				n.scanned = map[string]bool{}
			}
			n.scanned[e.Path] = true
			n.observe(journal.Create, e.Path, "", e.IsDir())
		}
		if e.IsDir() {
			n.addTree(e.Path, tell)
		}
	}
}

// addQuiet is addTree telling nothing (the first walk of the root, the
// re-walk after an overflow): it needs only which entries are directories,
// which the directory's own entries tell (d_type), so no entry is stat'ed,
// and one fd per directory serves the watch's identity check and the read.
// The fd is closed before descending, so the depth of the tree does not
// hold fds. The first walk (yield) lets claims in between directories: a
// large tree does not hold every operation until it is walked. Nothing
// else may yield: a read under way would lose its buffer.
func (n *notifier) addQuiet(ap string, yield bool) {
	if yield {
		n.mu.Unlock()
		n.mu.Lock()
	}
	// Another mount inside the root is not entered (xdev.go): a hole.
	fd, err := n.s.openResolve(ap, unix.O_RDONLY|unix.O_DIRECTORY, 0, unix.RESOLVE_NO_XDEV)
	if err != nil {
		n.refused(ap, err)
		return
	}
	d := os.NewFile(uintptr(fd), ap)
	if !n.addWatchFd(ap, fd) {
		d.Close()
		return
	}
	ents, _ := d.ReadDir(-1)
	d.Close()
	for _, e := range ents {
		if e.IsDir() { // d_type: a symlink is never a directory here
			n.addQuiet(childOf(ap, e.Name()), yield)
		}
	}
}

// addWatch watches one directory, opened beneath the root fd.
func (n *notifier) addWatch(ap string) bool {
	return n.addWatchFd(ap, -1)
}

// addWatchFd is addWatch with the directory already open at fd (-1: none).
func (n *notifier) addWatchFd(ap string, dirfd int) bool {
	if n.dirs[ap] {
		return true
	}
	fd := dirfd
	if fd < 0 {
		var err error
		if fd, err = n.s.openDir(ap); err != nil {
			n.refused(ap, err)
			return false
		}
		defer unix.Close(fd)
	}
	if _, err := n.w.AddFd(fd, n.host(ap)); err != nil {
		n.refused(ap, err)
		return false
	}
	n.cov.watch(ap)
	return true
}

// refused: the directory ap could not be opened or watched. Gone, or no
// longer a directory, it needs nothing: its parent's watch tells what is
// there now. Otherwise (the watch limit, ENOSPC; a descriptor refused) it
// is a hole: nothing under it is heard, so nothing under it is covered,
// and what the kernel may have cached there already (a lookup between
// its Create and now) is dropped, by telling it lost.
func (n *notifier) refused(ap string, err error) {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return
	}
	if errors.Is(err, unix.ENOSPC) && !n.degraded {
		n.degraded = true
		n.s.watchDegraded.Store(true)
		n.log.Error("inotify watch limit reached: changes under some directories will not be seen, and the mirror caches nothing there (raise fs.inotify.max_user_watches)", "sandbox", n.s.name, "dir", ap)
	}
	if n.cov.hole(ap) {
		if !errors.Is(err, unix.ENOSPC) {
			n.log.Warn("a directory could not be watched: changes under it will not be seen", "sandbox", n.s.name, "dir", ap, "err", err)
		}
		n.s.dirMoved()
		n.s.out.push(journal.Entry{Lost: ap})
	}
}
