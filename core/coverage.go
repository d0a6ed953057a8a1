package core

import (
	"sync"
	"sync/atomic"
)

// Watching reports whether the kernel watch of the root runs (a
// StartWatching whose context has not ended). The FUSE mirror needs the
// watch to hear of outside changes; it starts one only when nobody has.
func (s *Sandbox) Watching() bool {
	return s.ledger.dir() != ""
}

// WatchCovers reports whether an outside change to API path ap (its name in
// its directory, its attributes, or its content) is sure to reach the
// journal: the kernel watch runs, its first walk is done, and no directory
// on the way (ap itself included) is one whose watch was refused (holes).
// The mirror lets the kernel cache only what the watch covers. Nothing
// else decides it: .git and node_modules are watched like any directory,
// and what a watcher excludes filters its view, not the journal.
//
// A directory made since the watch's walk may still be waiting for its
// watch here: it is covered all the same, because its watch, once placed,
// lists it and tells what was made in it meanwhile (addTree).
func (s *Sandbox) WatchCovers(ap string) bool {
	select {
	case <-s.watchReady:
	default:
		return false
	}
	n := s.ledger.reader.Load()
	if n == nil || !s.Watching() {
		return false
	}
	return n.holes.covers(ap)
}

// holes are the directories of the root whose watch was refused (the
// inotify watch limit, ENOSPC; a descriptor the daemon could not open):
// nothing under one of them is heard, so nothing under it is covered.
// Only the top of an unwatched subtree is a hole, since the walk does not
// go on below a directory it could not watch. The notifier changes the
// set under its own lock; the mirror reads it at every lookup, so the
// usual case, no hole at all, is one atomic load.
type holes struct {
	n  atomic.Int64 // len(at)
	mu sync.RWMutex
	at map[string]bool // API paths
}

// covers reports whether no hole is ap or a directory above it.
func (h *holes) covers(ap string) bool {
	if h.n.Load() == 0 {
		return true
	}
	h.mu.RLock()
	defer h.mu.RUnlock()
	if h.at["/"] || h.at[ap] {
		return false
	}
	for i := 1; i < len(ap); i++ {
		if ap[i] == '/' && h.at[ap[:i]] {
			return false
		}
	}
	return true
}

// add makes the directory ap a hole; it reports whether it was not one.
func (h *holes) add(ap string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at[ap] {
		return false
	}
	if h.at == nil {
		h.at = map[string]bool{}
	}
	h.at[ap] = true
	h.n.Store(int64(len(h.at)))
	return true
}

// clear drops the hole at ap (watched now), and with tree those under it
// too (removed, or renamed away).
func (h *holes) clear(ap string, tree bool) {
	if h.n.Load() == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.at, ap)
	if tree {
		for d := range h.at {
			if ap == "/" || isUnder(d, ap) {
				delete(h.at, d)
			}
		}
	}
	h.n.Store(int64(len(h.at)))
}

// count is how many holes there are.
func (h *holes) count() int { return int(h.n.Load()) }
