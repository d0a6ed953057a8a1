package watch

import (
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
// handler, which must never append an event other than its own: appending
// waits for the mirror's kernel notifications (fusefs), and those wait for
// the very directory locks the handler's request holds. So the
// notifier never appends: it puts what it would tell here, and the reader
// (or the next REST operation) appends it. An operation's own event goes
// behind what waits:
//   - a REST operation's appends what waits itself, then its own, so the
//     REST call returns once the mount shows every change before it;
//   - a FUSE handler's (origin fuse, or an outside write a handle tells at
//     release) joins the queue when anything waits, and the reader appends
//     both in order; otherwise it is appended at once: the common case
//     costs an atomic load.
type outbox struct {
	mu      sync.Mutex
	q       []journal.Entry
	waiting atomic.Int64  // items queued or being appended (added to under mu)
	order   sync.Mutex    // held while appending, so that flushes keep the order
	wake    func()        // asks the reader to flush (nil: no reader)
	gone    atomic.Uint64 // directories moved or removed, and losses (DirMoved)
}

// push queues it. The notifier calls it (under its lock).
func (o *outbox) push(it journal.Entry) {
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
	o.queueLocked(e)
	o.mu.Unlock()
	return true
}

// queueLocked queues e behind what waits and asks the reader to append
// it. The lock is held; the wake never blocks.
func (o *outbox) queueLocked(e journal.Event) {
	o.q = append(o.q, journal.Entry{Event: e})
	o.waiting.Add(1)
	if o.wake != nil {
		o.wake()
	}
}

// busy reports whether anything waits (no lock: one load, at every claim).
func (o *outbox) busy() bool { return o.waiting.Load() > 0 }

// flushLocked appends to j, in order, what waited when it was called. What
// is queued meanwhile is left for the next flush: a flush that took it too
// could go on for as long as changes keep coming (the notifier queues
// outside changes at every claim), and a REST call waiting on the order
// lock behind it would never answer. A REST call needs only what was
// queued before its claim opened, which waits already. The order lock is
// held.
func (o *outbox) flushLocked(j *journal.Journal) {
	o.mu.Lock()
	batch := o.q
	o.q = nil
	o.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	j.AppendAll(batch)
	o.waiting.Add(-int64(len(batch)))
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

// Append appends the event e of an operation of the daemon behind every
// event the notifier handled before the operation's claim opened. A FUSE
// handler's (of origin fuse, or handler: a handler telling an event of
// another origin) never appends what waits: it joins it.
func (w *Watch) Append(e journal.Event, handler bool) {
	o, j := &w.out, w.h.Journal
	if e.Origin == journal.Mirror || handler {
		if !o.joined(e) {
			j.AppendNow(e) // a handler never waits on the mirror's notifications
		}
		return
	}
	if !o.busy() {
		j.Append(e) // nothing before it: concurrent REST calls append side by side
		return
	}
	o.order.Lock()
	defer o.order.Unlock()
	o.flushLocked(j)
	j.Append(e)
}

// AppendChecked appends e, a FUSE handler's event, as Append does, once
// check has passed it; check runs under the outbox's lock (which every
// event of the notifier takes too), with the count of directories moved
// (Gone) now, and may rename e's paths or drop it (false). Core's dir
// guard is its one caller (core/dir_guard.go).
func (w *Watch) AppendChecked(e journal.Event, check func(e *journal.Event, gone uint64) bool) {
	o := &w.out
	o.mu.Lock()
	defer o.mu.Unlock()
	if !check(&e, o.gone.Load()) {
		return
	}
	if o.waiting.Load() > 0 {
		o.queueLocked(e)
		return
	}
	w.h.Journal.AppendNow(e)
}

// CatchUp appends to the journal what the kernel has queued of outside
// changes made so far (as opening a claim does, ledger.go), so a
// checkpoint taken right after an outside write knows of it.
func (w *Watch) CatchUp() {
	w.ledger.readQueued()
	w.out.flush(w.h.Journal)
}

// DirMoved counts a directory about to be moved or removed, or a loss
// that may hide one (core/dir_guard.go says why). Before the change is
// told; for the daemon's own, before its syscall.
func (w *Watch) DirMoved() { w.out.gone.Add(1) }

// Gone is the count DirMoved keeps.
func (w *Watch) Gone() uint64 { return w.out.gone.Load() }
