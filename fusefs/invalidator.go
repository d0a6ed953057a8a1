package fusefs

import (
	"sync"
	"time"

	"sandfs/core/journal"
)

// invalidator sends the mirror's kernel notifications, in a goroutine of
// its own that holds nothing any other goroutine waits for.
//
// A notification of a name takes the kernel's lock of its directory; a
// process creating, renaming or removing in that directory holds that lock
// until the daemon answers its request. So a notification may wait for a
// FUSE handler to finish, and whoever sends one must hold nothing a
// handler may wait for. The journal hook (queue) only queues; Settle, the
// hook's wait, is called by a goroutine that appends someone else's event
// (a REST call, the kernel watch's reader), which holds no lock a FUSE
// handler takes; a FUSE handler never waits (journal.AppendNow). The wait
// is bounded: a notification slower than settleWait (a handler stuck on a
// slow disk keeps its directory locked) lets the appenders go on, and they
// do not wait again until the queue has drained.
type invalidator struct {
	m    *Mirror
	mu   sync.Mutex
	q    []inval
	in   uint64        // items queued, ever
	out  uint64        // items handled, ever
	step chan struct{} // closed (and replaced) whenever out moves
	wake chan struct{} // one token: something was queued
	stop chan struct{}
	done chan struct{}
	late bool          // a settle gave up: none waits until the queue drains
	wait time.Duration // settleWait, but in tests
}

// inval is an event to invalidate the paths of, or a loss (all of it),
// standing for n queued items (more than one when the queue was folded).
type inval struct {
	e    journal.Event
	lost bool
	n    uint64
}

// maxQueued bounds the queue: past it, what waits is folded into one
// invalidation of everything (a loss), which costs more requests of the
// kernel later but no memory now.
const maxQueued = 4096

// settleWait is the longest an appender waits for the notifications
// queued before its event.
const settleWait = 2 * time.Second

func newInvalidator(m *Mirror) *invalidator {
	v := &invalidator{m: m, step: make(chan struct{}), wake: make(chan struct{}, 1),
		stop: make(chan struct{}), done: make(chan struct{}), wait: settleWait}
	go v.run()
	return v
}

// queue is the journal hook: it takes e without blocking. The mirror's own
// events need nothing: the kernel keeps its caches true for changes made
// through it.
func (v *invalidator) queue(e journal.Event, lost bool) {
	if !lost && e.Origin == journal.Mirror {
		return
	}
	it := inval{e: e, lost: lost, n: 1}
	v.mu.Lock()
	if len(v.q) >= maxQueued {
		for _, x := range v.q {
			it.n += x.n
		}
		it.e, it.lost = journal.Event{Path: "/"}, true
		v.q = v.q[:0]
	}
	v.q = append(v.q, it)
	v.in++
	v.mu.Unlock()
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// settle waits until what was queued before it has been sent, up to
// settleWait.
func (v *invalidator) settle() {
	v.mu.Lock()
	target := v.in
	if v.late || v.out >= target {
		v.mu.Unlock()
		return
	}
	v.mu.Unlock()
	timer := time.NewTimer(v.wait)
	defer timer.Stop()
	for {
		v.mu.Lock()
		if v.out >= target {
			v.mu.Unlock()
			return
		}
		step := v.step
		v.mu.Unlock()
		select {
		case <-step:
		case <-v.done:
			return
		case <-timer.C:
			v.mu.Lock()
			v.late = true
			v.mu.Unlock()
			v.m.log.Warn("fuse: the kernel's caches were not invalidated in time: the mount may show an older state for a moment",
				"mountpoint", v.m.mountpoint, "waited", v.wait)
			return
		}
	}
}

// run sends what is queued, in order, until close.
func (v *invalidator) run() {
	defer close(v.done)
	for {
		select {
		case <-v.stop:
			return
		case <-v.wake:
		}
		for {
			v.mu.Lock()
			run := v.q
			v.q = nil
			if len(run) == 0 {
				v.late = false
				v.mu.Unlock()
				break
			}
			v.mu.Unlock()
			select {
			case <-v.stop:
				return
			default:
			}
			v.m.invalidateAll(run)
			var n uint64
			for _, it := range run {
				n += it.n
			}
			v.mu.Lock()
			v.out += n
			close(v.step)
			v.step = make(chan struct{})
			v.mu.Unlock()
		}
	}
}

// close stops the goroutine (after the notification under way, if one is)
// and waits for it; settles under way return.
func (v *invalidator) close() {
	close(v.stop)
	<-v.done
}
