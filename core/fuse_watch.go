package core

import "strings"

// Watching reports whether the kernel watch of the root runs (a
// StartWatching whose context has not ended). The FUSE mirror needs the
// watch to hear of outside changes; it starts one only when nobody has.
func (s *Sandbox) Watching() bool {
	return s.ledger.dir() != ""
}

// WatchCovers reports whether an outside change to API path ap (its name in
// its directory, its attributes, or its content) is sure to reach the
// journal: the kernel watch runs, its first walk is done, no watch was
// refused for lack of inotify watches, and no directory on the way is one
// of those never watched (.git, node_modules, …). The mirror lets the
// kernel cache only what the watch covers.
func (s *Sandbox) WatchCovers(ap string) bool {
	select {
	case <-s.watchReady:
	default:
		return false
	}
	if s.watchDegraded.Load() || !s.Watching() {
		return false
	}
	for rest := ap; rest != ""; {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		if skipDirs[c] {
			return false
		}
	}
	return true
}
