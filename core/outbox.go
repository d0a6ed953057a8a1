package core

import (
	"context"
	"sync"
	"sync/atomic"

	"sandfs/core/journal"
)

// outbox keeps the journal in the order the changes were made when the
// kernel watch's events are read by a goroutine that may not append them.
//
// A claim opens by reading the inotify queue (ledger.go), so the outside
// changes queued before it are handled before the operation's first
// syscall. When that claim is the mirror's, the reading goroutine is a FUSE
// handler, which must never append an event other than its own: the
// journal's hook would tell the kernel to forget caches (fusefs), and that
// blocks on the very inode locks the handler's request holds. So the
// notifier never appends: it puts what it would tell here, and the reader
// (or the next REST operation) appends it. An operation's own event goes
// behind what waits:
//   - a REST operation's appends what waits itself, then its own, so the
//     REST call returns once the mount shows every change before it;
//   - a FUSE handler's (origin fuse, or Emit's outside write told at
//     release) joins the queue when anything waits, and the reader appends
//     both in order; otherwise it is appended at once: the common case
//     costs an atomic load.
type outbox struct {
	mu      sync.Mutex
	q       []outItem
	waiting atomic.Int64 // items queued or being appended (added to under mu)
	order   sync.Mutex   // held while appending, so that flushes keep the order
	wake    func()       // asks the reader to flush (nil: no reader)
}

// outItem is an event to append, or a subtree whose watchers lost events.
type outItem struct {
	e    journal.Event
	lost string // journal.Lost of this path instead of e, when set
}

// push queues it. The notifier calls it (under its lock).
func (o *outbox) push(it outItem) {
	o.mu.Lock()
	o.q = append(o.q, it)
	o.waiting.Add(1)
	o.mu.Unlock()
}

// joined queues e behind what waits and asks the reader to append it, or
// says there is nothing to wait behind.
func (o *outbox) joined(e journal.Event) bool {
	if o.waiting.Load() == 0 {
		return false
	}
	o.mu.Lock()
	if o.waiting.Load() == 0 {
		o.mu.Unlock()
		return false
	}
	o.q = append(o.q, outItem{e: e})
	o.waiting.Add(1)
	wake := o.wake
	o.mu.Unlock()
	if wake != nil {
		wake()
	}
	return true
}

// busy reports whether anything waits (no lock: one load, at every claim).
func (o *outbox) busy() bool { return o.waiting.Load() > 0 }

// flush appends what waits to j, in order. The order lock is held.
func (o *outbox) flushLocked(j *journal.Journal) {
	for {
		o.mu.Lock()
		if len(o.q) == 0 {
			o.q = nil
			o.mu.Unlock()
			return
		}
		it := o.q[0]
		o.q[0] = outItem{}
		o.q = o.q[1:]
		o.mu.Unlock()
		if it.lost != "" {
			j.Lost(it.lost)
		} else {
			j.Append(it.e)
		}
		o.waiting.Add(-1)
	}
}

// flush appends what waits to j. Never from a FUSE handler (see outbox).
func (o *outbox) flush(j *journal.Journal) {
	if !o.busy() {
		return
	}
	o.order.Lock()
	o.flushLocked(j)
	o.order.Unlock()
}

// handlerKey marks the context of a FUSE handler that tells an event of
// another origin (Emit: the mirror's release tells an outside write).
type handlerKey struct{}

// inHandler marks ctx as a FUSE handler's.
func inHandler(ctx context.Context) context.Context {
	return context.WithValue(ctx, handlerKey{}, true)
}

// record appends the event e of an operation of the daemon behind every
// event the notifier handled before the operation's claim opened. A FUSE
// handler's never appends what waits: it joins it.
func (s *Sandbox) record(ctx context.Context, e journal.Event) {
	if e.Origin == journal.Mirror || ctx.Value(handlerKey{}) != nil {
		if !s.out.joined(e) {
			s.journal.Append(e)
		}
		return
	}
	if !s.out.busy() {
		s.journal.Append(e) // nothing before it: concurrent REST calls append side by side
		return
	}
	s.out.order.Lock()
	defer s.out.order.Unlock()
	s.out.flushLocked(s.journal)
	s.journal.Append(e)
}
