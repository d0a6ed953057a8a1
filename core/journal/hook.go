package journal

import (
	"sync"
	"sync/atomic"
)

// A Hook hears of every event before it is stored and handed to any
// reader. Queue takes the event and must not block: it runs in the
// appending goroutine, which may hold locks of its caller. Settle, when
// set, waits until what Queue took before it is handled (bounded by the
// hook itself); Append calls it after Queue and before it stores the
// event, with no lock of the journal held, so once anyone can read an
// event the hook has finished with it. The FUSE mirror uses one to
// invalidate the kernel's caches in a goroutine of its own, which makes
// "the journal told it" imply "the mount shows it". AppendNow skips Settle:
// a FUSE handler must never wait on the mirror's notifications (the kernel
// may be waiting on that very handler to send them). Neither may call back
// into the journal.
type Hook struct {
	Queue  func(e Event, lost bool)
	Settle func()
}

type hooks struct {
	mu  sync.Mutex              // serializes changes of list
	fns atomic.Pointer[[]*Hook] // read without a lock by run
}

// OnAppend registers h: h.Queue is called for every event before it is
// stored (lost is false), and for every loss marker (lost is true; e.Path
// is the path under which events were lost). The returned function removes
// h; a call of h already under way may still finish after it returns.
func (j *Journal) OnAppend(h Hook) (remove func()) {
	hp := &h
	j.hooks.update(func(l []*Hook) []*Hook { return append(l, hp) })
	return func() {
		j.hooks.update(func(l []*Hook) []*Hook {
			out := make([]*Hook, 0, len(l))
			for _, x := range l {
				if x != hp {
					out = append(out, x)
				}
			}
			return out
		})
	}
}

func (hs *hooks) update(change func([]*Hook) []*Hook) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	var cur []*Hook
	if p := hs.fns.Load(); p != nil {
		cur = append(cur, *p...)
	}
	next := change(cur)
	hs.fns.Store(&next)
}

// run hands e to every hook, then, when settle is set, waits for those that
// settle.
func (hs *hooks) run(e Event, lost, settle bool) {
	p := hs.fns.Load()
	if p == nil {
		return
	}
	for _, h := range *p {
		h.Queue(e, lost)
	}
	if settle {
		hs.settle()
	}
}

// settle waits for every hook that settles.
func (hs *hooks) settle() {
	p := hs.fns.Load()
	if p == nil {
		return
	}
	for _, h := range *p {
		if h.Settle != nil {
			h.Settle()
		}
	}
}
