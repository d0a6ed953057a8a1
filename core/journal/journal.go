package journal

import (
	"sync"
	"sync/atomic"
	"time"
)

// RingSize is how many recent events a journal keeps for Since.
const RingSize = 10_000

// Journal is the sequence of events of one sandbox.
type Journal struct {
	mu       sync.Mutex
	seq      uint64
	ring     []Event // ring[i%RingSize] holds seq i+1
	watchers map[string]*Watcher
	byKey    map[string]*Watcher
	subs     map[*Subscription]struct{}
	counts   map[Origin]map[Type]uint64
	now      func() time.Time
	maxW     int
	hooks    hooks

	dropped   atomic.Uint64 // events a watcher or subscription could not keep
	overflows atomic.Uint64 // Lost calls: kernel queue overflows
}

// New makes an empty journal.
func New() *Journal {
	return &Journal{
		ring:     make([]Event, 0, 64),
		watchers: map[string]*Watcher{},
		byKey:    map[string]*Watcher{},
		subs:     map[*Subscription]struct{}{},
		counts:   map[Origin]map[Type]uint64{},
		now:      time.Now,
		maxW:     MaxWatchers,
	}
}

// Append gives e the next sequence number and the current time, keeps it,
// and hands it to every watcher and subscription. It never blocks on a
// reader. Hooks (OnAppend) run first, in the caller's goroutine. It
// returns the event as stored.
func (j *Journal) Append(e Event) Event {
	j.hooks.run(e, false)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	e.Seq = j.seq
	e.Time = j.now()
	if len(j.ring) < RingSize {
		j.ring = append(j.ring, e)
	} else {
		j.ring[(e.Seq-1)%RingSize] = e
	}
	byType := j.counts[e.Origin]
	if byType == nil {
		byType = map[Type]uint64{}
		j.counts[e.Origin] = byType
	}
	byType[e.Type]++
	for _, w := range j.watchers {
		w.offer(e)
	}
	for s := range j.subs {
		s.offer(e)
	}
	return e
}

// Seq is the sequence number of the latest event (0 before any).
func (j *Journal) Seq() uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.seq
}

// Since returns up to max events after seq that the ring still holds, and
// whether some after seq were already overwritten.
func (j *Journal) Since(seq uint64, max int) (events []Event, lost bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	oldest := uint64(1)
	if j.seq > RingSize {
		oldest = j.seq - RingSize + 1
	}
	if seq+1 < oldest {
		lost = true
		seq = oldest - 1
	}
	for s := seq + 1; s <= j.seq && (max <= 0 || len(events) < max); s++ {
		if e := j.ring[(s-1)%RingSize]; e.Type != "" { // "": a loss marker
			events = append(events, e)
		}
	}
	return events, lost
}

// Counts reports how many events each origin made of each type.
func (j *Journal) Counts() map[Origin]map[Type]uint64 {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make(map[Origin]map[Type]uint64, len(j.counts))
	for o, m := range j.counts {
		c := make(map[Type]uint64, len(m))
		for t, n := range m {
			c[t] = n
		}
		out[o] = c
	}
	return out
}

// Lost tells every watcher whose path covers p (an API path; "/" for all)
// that events under it were lost (a kernel queue overflow). The loss takes a
// sequence number of its own (no event is stored under it), so every
// cursor, even one that has read everything, is before it and the next poll
// reports overflow.
func (j *Journal) Lost(p string) {
	j.hooks.run(Event{Path: p}, true)
	j.overflows.Add(1)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	marker := Event{Seq: j.seq, Time: j.now()}
	if len(j.ring) < RingSize {
		j.ring = append(j.ring, marker)
	} else {
		j.ring[(j.seq-1)%RingSize] = marker
	}
	for _, w := range j.watchers {
		if w.cfg.Path == "/" || p == "/" || within(p, w.cfg.Path) || within(w.cfg.Path, p) {
			w.markLost(j.seq)
		}
	}
	for s := range j.subs {
		s.markLost()
	}
}

// Dropped is how many events watchers (a full buffer drops its oldest) and
// subscriptions (a reader behind) could not keep, since the journal began.
func (j *Journal) Dropped() uint64 { return j.dropped.Load() }

// Overflows is how many times events were lost before the journal (Lost:
// the kernel's queue overflowed).
func (j *Journal) Overflows() uint64 { return j.overflows.Load() }

// Scan calls fn with every kept event after seq, in order, until fn
// returns false. lost says that events after seq were no longer kept
// (retention, or the in-memory ring of a journal without a store), so what
// fn saw is not all that happened after seq.
func (j *Journal) Scan(seq uint64, fn func(Event) bool) (lost bool, err error) {
	events, lost := j.Since(seq, 0)
	for _, e := range events {
		if !fn(e) {
			break
		}
	}
	return lost, nil
}
