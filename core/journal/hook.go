package journal

import (
	"sync"
	"sync/atomic"
)

// Hooks run synchronously, in the goroutine that appends, before the event
// is stored and handed to any reader. So once anyone can read an event, every
// hook has finished with it: the FUSE mirror uses one to invalidate the
// kernel's caches, which makes "the journal told it" imply "the mount shows
// it". A hook runs with no lock held (it may block in the kernel, and an
// Append from another goroutine must never wait behind it) and must not call
// back into the journal.
type hooks struct {
	mu  sync.Mutex                  // serializes changes of list
	fns atomic.Pointer[[]*hookFunc] // read without a lock by run
}

type hookFunc struct{ f func(e Event, lost bool) }

// OnAppend registers f to be called for every event before it is stored
// (lost is false), and for every loss marker (lost is true; e.Path is the
// path under which events were lost). The returned function removes f; a
// call of f already under way may still finish after it returns.
func (j *Journal) OnAppend(f func(e Event, lost bool)) (remove func()) {
	h := &hookFunc{f: f}
	j.hooks.update(func(l []*hookFunc) []*hookFunc { return append(l, h) })
	return func() {
		j.hooks.update(func(l []*hookFunc) []*hookFunc {
			out := make([]*hookFunc, 0, len(l))
			for _, x := range l {
				if x != h {
					out = append(out, x)
				}
			}
			return out
		})
	}
}

func (hs *hooks) update(change func([]*hookFunc) []*hookFunc) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var cur []*hookFunc
	if p := hs.fns.Load(); p != nil {
		cur = append(cur, *p...)
	}
	next := change(cur)
	hs.fns.Store(&next)
}

// run calls every hook with e.
func (hs *hooks) run(e Event, lost bool) {
	p := hs.fns.Load()
	if p == nil {
		return
	}
	for _, h := range *p {
		h.f(e, lost)
	}
}
