package watch

import (
	"sandfs/core/apipath"
	"sync"
)

// Running reports whether the kernel watch of the root runs (a Start
// whose context has not ended).
func (w *Watch) Running() bool {
	return w.ledger.dir() != ""
}

// Covers reports whether an outside change to API path ap (its name in
// its directory, its attributes, or its content) is sure to reach the
// journal: the kernel watch runs, its first walk is done, every directory
// above ap has its watch in place now, and ap is not a directory whose
// watch was refused (a hole). The mirror lets the kernel cache only what
// the watch covers, and holds descriptors only there. Nothing else
// decides it: .git and node_modules are watched like any directory, and
// what a watcher excludes filters its view, not the journal.
//
// A directory made since the walk is not covered beneath until the
// notifier has read its Create and placed its watch (a fraction of a
// millisecond): in between, a file made and removed there by an outside
// process would never be told (the watch's scan finds only what is
// there), so the kernel must not have cached it. The directory itself is
// covered at once, by its parent's watch; its listing too, since the scan
// tells what was made in it meanwhile (addTree).
func (w *Watch) Covers(ap string) bool {
	select {
	case <-w.ready:
	default:
		return false
	}
	n := w.ledger.reader.Load()
	if n == nil || !w.Running() {
		return false
	}
	return n.cov.covers(ap)
}

// UnheardNear reports whether outside changes at, above or under API path
// ap may go untold now: a directory there is a hole of the kernel watch.
func (w *Watch) UnheardNear(ap string) bool {
	n := w.ledger.reader.Load()
	if n == nil {
		return false
	}
	return n.cov.holeNear(ap)
}

// coverage is what the kernel watch hears, per directory: the directories
// whose watch is in place (watched: the notifier's dirs), and those whose
// watch was refused (holes: the inotify watch limit, ENOSPC; a descriptor
// the daemon could not open), under which nothing is heard. Only the top
// of an unwatched subtree is a hole, since the walk does not go below a
// directory it could not watch. The notifier changes both under its own
// lock and mu (and reads them under its lock alone); the mirror reads
// them at every lookup and getattr, under mu.
type coverage struct {
	mu      sync.RWMutex
	watched map[string]bool            // API paths
	kids    map[string]map[string]bool // the watched directories right under each
	holes   map[string]bool            // API paths
}

func newCoverage() *coverage {
	return &coverage{watched: map[string]bool{}, kids: map[string]map[string]bool{}, holes: map[string]bool{}}
}

// covers reports whether every directory above ap is watched and ap is no
// hole.
func (c *coverage) covers(ap string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.holes[ap] {
		return false
	}
	if ap == "/" {
		return true
	}
	if !c.watched["/"] {
		return false
	}
	for i := 1; i < len(ap); i++ {
		if ap[i] == '/' && !c.watched[ap[:i]] {
			return false
		}
	}
	return true
}

// watch records that the directory ap is watched: it is no hole any more.
func (c *coverage) watch(ap string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watched[ap] = true
	delete(c.holes, ap)
	if ap != "/" {
		dir, _ := apipath.Split(ap)
		if c.kids[dir] == nil {
			c.kids[dir] = map[string]bool{}
		}
		c.kids[dir][ap] = true
	}
}

// unwatch records that the directory ap and those under it are not
// watched any more, and returns them. It walks the subtree by kids, so an
// outside rm -r of a large tree, told bottom up, costs the reader one
// step a directory, not a look at every directory watched.
func (c *coverage) unwatch(ap string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.watched[ap] {
		return nil
	}
	if ap != "/" {
		dir, _ := apipath.Split(ap)
		delete(c.kids[dir], ap)
		if len(c.kids[dir]) == 0 {
			delete(c.kids, dir)
		}
	}
	var gone []string
	for todo := []string{ap}; len(todo) > 0; {
		d := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		gone = append(gone, d)
		delete(c.watched, d)
		for k := range c.kids[d] {
			todo = append(todo, k)
		}
		delete(c.kids, d)
	}
	return gone
}

// hole makes the directory ap a hole; it reports whether it was not one.
func (c *coverage) hole(ap string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holes[ap] {
		return false
	}
	c.holes[ap] = true
	return true
}

// unhole drops the holes at and under ap (removed, or renamed away). The
// caller, the notifier, is the only one to change holes, so it may look
// at it without mu: usually there is none, and no lock is taken.
func (c *coverage) unhole(ap string) {
	if len(c.holes) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for d := range c.holes {
		if d == ap || ap == "/" || apipath.Under(d, ap) {
			delete(c.holes, d)
		}
	}
}

// holeNear reports whether a hole is at, above or under ap.
func (c *coverage) holeNear(ap string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for h := range c.holes {
		if apipath.Within(h, ap) || apipath.Within(ap, h) {
			return true
		}
	}
	return false
}
