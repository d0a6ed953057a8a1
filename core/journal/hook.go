package journal

import "sync"

// Hooks run synchronously, in the goroutine that appends, before the event
// is stored and handed to any reader. So once anyone can read an event, every
// hook has finished with it: the FUSE mirror uses one to invalidate the
// kernel's caches, which makes "the journal told it" imply "the mount shows
// it". A hook must not call back into the journal, and runs with no lock of
// the journal's held.
type hooks struct {
	mu sync.RWMutex
	fs map[*hookEntry]struct{}
}

type hookEntry struct {
	f func(e Event, lost bool)
}

// OnAppend registers f to be called for every event before it is stored
// (lost is false), and for every loss marker (lost is true; e.Path is the
// path under which events were lost). The returned function removes f and
// returns once no call of f is in progress; it must not be called from f.
func (j *Journal) OnAppend(f func(e Event, lost bool)) (remove func()) {
	h := &hookEntry{f: f}
	j.hooks.mu.Lock()
	if j.hooks.fs == nil {
		j.hooks.fs = map[*hookEntry]struct{}{}
	}
	j.hooks.fs[h] = struct{}{}
	j.hooks.mu.Unlock()
	return func() {
		j.hooks.mu.Lock()
		delete(j.hooks.fs, h)
		j.hooks.mu.Unlock()
	}
}

// run calls every hook with e. Hooks may block (a kernel notify waits for
// the kernel); the read lock only keeps the set stable.
func (hs *hooks) run(e Event, lost bool) {
	hs.mu.RLock()
	defer hs.mu.RUnlock()
	for h := range hs.fs {
		h.f(e, lost)
	}
}
