package watch

import (
	"sandfs/core/journal"
)

// Renames: the kernel queues a rename as two halves, MOVED_FROM(old) in
// the old directory and MOVED_TO(new) in the new one, paired by a cookie.
// The second half never comes when the new directory is not watched
// (outside the tree, or made a moment before and not yet watched): the
// first then waits renamePairWait for it and is told as a move out.

// holdSentinel closes the claims lent the slot name (ledger.sentinel),
// unless a rename's first half waits for its pair: that half was queued
// before the sentinel, so it is an echo of the claims open then, and it
// is judged with them. Handled at once, it would close a claim whose own
// rename into a directory just made (a tar's staging directory moving
// into place) would then be told as an outside remove.
func (n *notifier) holdSentinel(name string) {
	if n.pending != "" {
		n.held = append(n.held, name)
		return
	}
	n.w.ledger.sentinel(name)
}

// releaseSentinels handles the sentinels held while a rename waited for
// its pair, now that it was judged.
func (n *notifier) releaseSentinels() {
	for _, name := range n.held {
		n.w.ledger.sentinel(name)
	}
	n.held = n.held[:0]
}

// renamed handles the rename of old to ap, a directory if isDir (IN_ISDIR:
// only a directory's rename costs an lstat, for its ctime).
func (n *notifier) renamed(old, ap string, isDir bool) {
	if isDir {
		n.w.DirMoved()
	}
	n.forget(old)
	n.observe(journal.Rename, ap, old, isDir)
	if !isDir {
		return
	}
	if ctime, err := n.w.h.Ctime(ap); err == nil {
		n.addTree(ap, pickSince(ctime))
	}
}

// flushPending tells a Rename that no Create followed: moved out of the tree.
func (n *notifier) flushPending() {
	old := n.pending
	if old == "" {
		return
	}
	n.pending = ""
	isDir := n.dirs[old]
	if isDir {
		n.w.DirMoved()
	}
	n.forget(old)
	n.observe(journal.Remove, old, "", isDir)
	n.releaseSentinels()
}
