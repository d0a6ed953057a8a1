package history

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// Retention bounds what a Log keeps; zero fields do not bound. Pruning goes
// oldest first, and never past the manifest's seq (manifest.go): the
// events the next start needs to know the tree are kept until a newer
// manifest is written.
type Retention struct {
	MaxAge    time.Duration
	MaxEvents int64
	MaxBytes  int64
}

// DefaultRetention is serve's default: 30 days, 1,000,000 events, 1 GiB.
var DefaultRetention = Retention{MaxAge: 30 * 24 * time.Hour, MaxEvents: 1_000_000, MaxBytes: 1 << 30}

// Log is a sandbox's durable journal: the tail and the database in its
// state directory. It implements journal.Store.
type Log struct {
	dir  string // the state directory's path, for messages
	dfd  int
	lock int // flock'd: one daemon per journal
	db   *db
	keep Retention
	log  *slog.Logger

	mu         sync.Mutex
	cond       *sync.Cond
	tail       *tail
	mark       *mark                 // the writer's alone after open
	pending    []journal.Event       // appended, not yet in the database
	spare      []journal.Event       // the last batch's array, for the next pending (no regrowing under the lock)
	committed  uint64                // newest seq in the database
	oldest     uint64                // oldest seq in the database
	newest     uint64                // newest seq at open
	failed     error                 // the writer's last error
	full       atomic.Bool           // failed for want of space (read without the lock)
	removed    atomic.Bool           // the state directory was removed (failing.go)
	damaged    atomic.Pointer[error] // SQLite found the database damaged (failing.go)
	markFailed bool                  // the writer's: a mark it could not raise was said
	ballast    bool                  // the writer's: the ballast is in place (ballast.go)
	dropped    bool                  // pending events were dropped while failing (said once)
	closed     bool

	wake   chan struct{}
	urgent chan struct{} // a reader waits, or the batch is large: stop gathering
	done   chan struct{}
	// prunable is the newest seq a prune may delete (the manifest's seq).
	prunable  uint64
	lastPrune time.Time
	// pruned is what the last prune saw: the newest seq committed and
	// prunable.
	pruned struct{ committed, prunable uint64 }
}

// Newest is the newest seq the journal held when it was opened: the
// journal's numbering continues after it.
func (l *Log) Newest() uint64 { return l.newest }

// Oldest is the oldest seq still kept (0 when none).
func (l *Log) Oldest() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.oldest
}

// Append takes e (its seq set) into the tail and queues it for the
// database. It runs under the journal's lock and makes no system call.
func (l *Log) Append(e journal.Event) {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return
	}
	t := l.tail
	fits := t.fits(e) // encodes e once, for write
	if !fits {
		// The tail is full: start it over once the database holds all of it.
		for l.committed < t.last && l.failed == nil && !l.closed {
			l.urgently()
			l.cond.Wait()
		}
		t.reset()
		fits = t.fits(e)
	}
	if fits {
		t.write(e.Seq)
	}
	l.pending = append(l.pending, e)
	if l.oldest == 0 {
		l.oldest = e.Seq
	}
	if l.failed != nil && len(l.pending) > maxPendingFailing {
		l.dropPending() // failing.go
	}
	n := len(l.pending)
	l.mu.Unlock()
	switch {
	case n >= maxBatch:
		l.urgently()
	case n == 1:
		// The batch's first event wakes the writer, which gathers the
		// rest; a batch it could not store is retried at its tick.
		l.kick()
	}
}

func (l *Log) kick() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// writer moves pending events into the database, each batch gathered for
// up to gatherFor from its first event (less when asked urgently), and
// prunes.
func (l *Log) writer() {
	defer close(l.done)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	more := false // a full batch is waiting: take it without waiting
	for {
		if !more {
			select {
			case <-l.wake:
				// The batch gathers from its first event on: the tail
				// already holds each event, so the database may lag it (a
				// reader that needs it asks urgently), and a sandbox of few
				// events a second pays one transaction for many, not one
				// for each.
				l.gather()
			case <-tick.C:
			}
		}
		l.checkRemoved()
		l.mu.Lock()
		closed := l.closed
		var batch []journal.Event
		switch {
		case closed:
		case len(l.pending) > maxBatch:
			batch = l.pending[:maxBatch:maxBatch]
			l.pending = l.pending[maxBatch:]
		default:
			batch = l.pending
			l.pending, l.spare = l.spare[:0], nil
		}
		more = len(l.pending) >= maxBatch
		l.mu.Unlock()
		if closed {
			l.finish()
			return
		}
		if len(batch) > 0 {
			err := beforeCommit(len(batch))
			if err == nil {
				err = l.db.appendBatch(batch)
			}
			l.mu.Lock()
			if err != nil {
				if l.failed == nil { // said once, not at every retry
					l.log.Error("journal: storing events failed; the tail keeps them, retrying", "dir", l.dir, "err", err)
				}
				l.failed = err
				l.full.Store(l.outOfSpace(err))
				l.pending = append(batch, l.pending...) // try again at the next wake-up
			} else {
				if l.failed != nil {
					l.log.Info("journal: storing events again", "dir", l.dir)
				}
				l.failed = nil
				l.full.Store(false)
				l.committed = batch[len(batch)-1].Seq
				if cap(batch) <= 1<<16 {
					clear(batch)
					l.spare = batch[:0]
				}
			}
			committed := l.committed
			l.cond.Broadcast()
			l.mu.Unlock()
			if err != nil {
				time.Sleep(100 * time.Millisecond)
				continue
			}
			l.raiseMark(committed)
			if !l.ballast {
				l.ballast = l.makeBallast()
			}
		}
		if l.pruneDue(time.Now()) {
			l.prune()
		}
	}
}

// finish commits what is pending at close, in batches, for up to
// closeWait: what is left stays in the tail, which the next open gives to
// the database, as after a kill. A daemon that stops after a burst its
// database lagged (up to the tail's 32 MiB of events) stops in seconds.
func (l *Log) finish() {
	end := time.Now().Add(closeWait)
	for {
		l.mu.Lock()
		n := min(len(l.pending), maxBatch)
		batch := l.pending[:n:n]
		l.mu.Unlock()
		if n == 0 {
			return
		}
		if !time.Now().Before(end) {
			l.log.Warn("journal: events left in the tail for the next start to store", "dir", l.dir, "count", len(l.pending))
			return
		}
		if err := l.db.appendBatch(batch); err != nil {
			l.log.Error("journal: storing events at close (the tail keeps them for the next start)", "dir", l.dir, "err", err)
			return
		}
		l.mu.Lock()
		l.pending = l.pending[n:]
		l.committed = batch[n-1].Seq
		l.cond.Broadcast()
		l.mu.Unlock()
	}
}

// closeWait bounds how long a close commits what is pending, in batches
// of maxBatch (a variable: a test leaves everything to the tail).
var closeWait = 3 * time.Second

// maxBatch is the most events one transaction stores. A batch taken whole
// grew with the appends made while the last one committed: 145,000 outside
// changes in one transaction kept a stop waiting on it for over 20 s (a
// loaded machine, the race detector). In batches of this size the writer
// sees a close between two of them, and a batch never waits to fill past it.
const maxBatch = 4096

// beforeCommit is called with each batch's size before the writer stores
// it: a test holds the writer there, or fails the commit with its error.
var beforeCommit = func(int) error { return nil }

// pruneDue reports whether the writer is to prune now, and if so notes
// what the prune sees. A prune finds something to cut by count or size only
// once events were committed (or the manifest moved prunable) since the
// last one, and by age only as time passes: so it runs at most every
// pruneEvery while events come, at once when the manifest moved (a walk
// of the tree, minutes apart), and once every idlePruneEvery while the
// sandbox is idle. An idle sandbox then asks nothing of its database, and
// its connection closes (openDB's idle time) with the memory SQLite holds
// for it: 100 idle sandboxes asked four queries a second each.
func (l *Log) pruneDue(now time.Time) bool {
	since := now.Sub(l.lastPrune)
	l.mu.Lock()
	seen := struct{ committed, prunable uint64 }{l.committed, l.prunable}
	l.mu.Unlock()
	switch {
	case seen.prunable != l.pruned.prunable && !l.lastPrune.IsZero():
	case since < pruneEvery:
		return false
	case seen == l.pruned && since < idlePruneEvery:
		return false
	}
	l.pruned, l.lastPrune = seen, now
	return true
}

// pruneEvery is how often the writer prunes at most while events come:
// the bounds are kept to within what a sandbox appends in that time. Each
// prune is a few queries; 100 busy sandboxes pruning every second spent
// as much on them as on their commits.
const pruneEvery = 10 * time.Second

// idlePruneEvery is how often an idle sandbox's journal checks its age
// bound (Retention.MaxAge, days): longer than openDB's idle time, so the
// connection closes in between.
const idlePruneEvery = 5 * time.Minute

// gather lets appends gather into the next batch: from the wake-up of the
// batch's first event, the writer waits up to gatherFor, or less when a
// reader waits for the database (syncTo), the tail is full, the log
// closes, or many events are pending. A batch is one transaction, whose
// cost is most of what a small batch costs.
func (l *Log) gather() {
	t := time.NewTimer(gatherFor)
	defer t.Stop()
	select {
	case <-t.C:
	case <-l.urgent:
	}
}

// gatherFor bounds how long the writer waits for a batch to fill. With 100
// sandboxes sharing a request load, each one's events come tens of
// milliseconds apart: committing each alone (the batch taken at its
// wake-up) cost a quarter of the daemon's CPU (the fleet bench), a batch every
// 100 ms still a tenth (1,000 transactions a second), and one every second
// the largest share of what serving 100 sandboxes cost more than serving
// one (100 transactions a second, each ~150 µs of SQLite whatever it
// holds). A sandbox that appends fast fills a batch sooner (4,096 events).
// What the database lags costs nobody: the tail holds every event from its
// append (a daemon killed loses none), the journal serves readers from
// memory, and one that needs the database asks urgently (syncTo). A power
// loss loses what the kernel had not written back, with or without the lag
// (the tail is not fsynced, nor is a WAL commit: synchronous=NORMAL).
const gatherFor = 5 * time.Second

// urgently asks the writer to store what is pending now.
func (l *Log) urgently() {
	select {
	case l.urgent <- struct{}{}:
	default:
	}
	l.kick()
}

// Sync waits until the database holds every event appended before it.
func (l *Log) Sync() error { return l.syncTo(0) }

// syncTo waits until the database holds seq (0: all appended).
func (l *Log) syncTo(seq uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if seq == 0 && len(l.pending) > 0 {
		seq = l.pending[len(l.pending)-1].Seq
	}
	var busySince time.Time
	for l.committed < seq && !l.closed {
		if l.failed != nil {
			if !busyErr(l.failed) {
				return l.unavailable(l.failed)
			}
			if busySince.IsZero() {
				busySince = time.Now()
			} else if time.Since(busySince) > busyPatience {
				return l.unavailable(l.failed)
			}
		}
		l.urgently()
		l.cond.Wait()
	}
	return nil
}

// Scan calls fn with the kept events in (after, until], in order.
func (l *Log) Scan(ctx context.Context, after, until uint64, fn func(journal.Event) bool) error {
	if err := l.syncTo(until); err != nil {
		return err
	}
	if oldest := l.Oldest(); oldest > after+1 {
		after = oldest - 1 // pruned: a kept chunk may still hold them
	}
	return l.unavailable(l.db.scan(ctx, after, until, fn))
}

// SeqAt is the first kept seq at or after t (0 when none).
func (l *Log) SeqAt(t time.Time) (uint64, error) {
	if err := l.Sync(); err != nil {
		return 0, err
	}
	seq, err := l.db.seqAt(t)
	return seq, l.unavailable(err)
}

// Close stores what is pending and closes the files.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.cond.Broadcast()
	l.mu.Unlock()
	l.urgently()
	<-l.done
	l.tail.close()
	l.mark.close()
	err := l.db.close()
	unix.Close(l.lock)
	unix.Close(l.dfd)
	return err
}
