package watch

import (
	"errors"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/core/journal"
	"sandfs/internal/dirent"
)

// Placing the kernel watch on a tree: a watch per directory, each through
// the descriptor the walk holds of it (doc.go, "The kernel watch").

// Which entries a walk of a newly watched tree reports as created.
var (
	pickNone func(Entry) bool                   // nil: report nothing, the quiet walk (addQuiet)
	pickAll  = func(Entry) bool { return true } // a directory that arrived with contents
)

// pickSince picks the entries changed since t: after a directory rename, the
// files made in it between the rename and its new watch (a rename sets the
// moved directory's ctime, and a new file's ctime is no older).
func pickSince(t time.Time) func(Entry) bool {
	return func(e Entry) bool { return !e.Ctime.Before(t) }
}

// addTree watches the directory ap and every directory under it,
// reporting as created the entries pick picks.
func (n *notifier) addTree(ap string, pick func(Entry) bool) {
	if pick == nil {
		n.addQuiet(ap, false)
		return
	}
	if !n.addWatch(ap) {
		return
	}
	entries, err := n.w.h.List(ap)
	if err != nil {
		return
	}
	for _, e := range entries {
		if pick(e) {
			if len(n.scanned) > journal.BufferSize {
				n.scanned = map[string]bool{}
			}
			n.scanned[e.Path] = true
			n.observe(journal.Create, e.Path, "", e.IsDir)
		}
		if e.IsDir {
			n.addTree(e.Path, pick)
		}
	}
}

// addQuiet is addTree reporting nothing (the first walk of the root, the
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
	// Another mount inside the root is not entered (Host.OpenTree): a hole.
	fd, err := n.w.h.OpenTree(ap)
	if err != nil {
		n.refused(ap, err)
		return
	}
	if !n.addWatchFd(ap, fd) {
		unix.Close(fd)
		return
	}
	subs, known := n.w.h.Made[ap]
	if !known || !yield { // Made tells the first walk only: later the tree is another
		subs = subdirs(fd)
	}
	unix.Close(fd)
	for _, name := range subs {
		n.addQuiet(apipath.Child(ap, name), yield)
	}
}

// subdirs reads the names of the directories the directory open at fd
// holds, by their entries' kinds (d_type), so no entry is stat'ed.
func subdirs(fd int) []string {
	var subs []string
	r := dirent.NewReader(fd)
	for {
		ents, err := r.Next(1024)
		for _, e := range ents {
			if e.IsDir() { // a symlink is never a directory here
				subs = append(subs, e.Name)
			}
		}
		if err != nil || len(ents) == 0 {
			return subs
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
		if fd, err = n.w.h.OpenDir(ap); err != nil {
			n.refused(ap, err)
			return false
		}
		defer unix.Close(fd)
	}
	if _, err := n.in.AddFd(fd, n.host(ap)); err != nil {
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
		n.w.degraded.Store(true)
		n.log.Error("inotify watch limit reached: changes under some directories will not be seen, and the mirror caches nothing there (raise fs.inotify.max_user_watches)", "sandbox", n.w.h.Name, "dir", ap)
	}
	if n.cov.hole(ap) {
		if !errors.Is(err, unix.ENOSPC) {
			n.log.Warn("a directory could not be watched: changes under it will not be seen", "sandbox", n.w.h.Name, "dir", ap, "err", err)
		}
		n.w.DirMoved()
		n.w.out.push(journal.Entry{Lost: ap})
	}
}
