package journal

import (
	"context"
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
	base     uint64  // seq when the journal was made (a store's newest)
	ring     []Event // ring[(s-base-1)%RingSize] holds seq s
	store    Store   // nil: in memory only
	saveMu   sync.Mutex
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
// reader. Hooks (OnAppend) are told first, in the caller's goroutine, and
// waited for (Hook.Settle). It returns the event as stored.
func (j *Journal) Append(e Event) Event {
	j.hooks.run(e, false, true)
	return j.add(e)
}

// AppendNow is Append without waiting for the hooks (they are told): for a
// FUSE handler, which must never wait on the mirror's notifications.
func (j *Journal) AppendNow(e Event) Event {
	j.hooks.run(e, false, false)
	return j.add(e)
}

// add numbers, keeps and hands out e.
func (j *Journal) add(e Event) Event {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	e.Seq = j.seq
	e.Time = j.now()
	j.keep(e)
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

// keep puts e in the ring and the store (under j.mu).
func (j *Journal) keep(e Event) {
	if len(j.ring) < RingSize {
		j.ring = append(j.ring, e)
	} else {
		j.ring[(e.Seq-j.base-1)%RingSize] = e
	}
	if j.store != nil {
		j.store.Append(e)
	}
}

// ringOldest is the oldest seq the ring holds (j.seq+1 when empty).
func (j *Journal) ringOldest() uint64 {
	return j.seq - uint64(len(j.ring)) + 1
}

// Since returns up to max events after seq that the ring still holds, and
// whether some after seq were no longer there. It never reads the store:
// Scan does.
func (j *Journal) Since(seq uint64, max int) (events []Event, lost bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.sinceLocked(seq, max)
}

func (j *Journal) sinceLocked(seq uint64, max int) (events []Event, lost bool) {
	oldest := j.ringOldest()
	if seq+1 < oldest {
		lost = true
		seq = oldest - 1
	}
	for s := seq + 1; s <= j.seq && (max <= 0 || len(events) < max); s++ {
		if e := j.ring[(s-j.base-1)%RingSize]; e.Type != "" {
			events = append(events, e)
		} else {
			lost = true // a loss marker: events were lost here
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
	j.hooks.run(Event{Path: p}, true, true)
	j.addLost(p)
}

// addLost numbers and keeps the loss under p and marks the watchers.
func (j *Journal) addLost(p string) {
	j.overflows.Add(1)
	j.mu.Lock()
	defer j.mu.Unlock()
	j.seq++
	j.keep(Event{Seq: j.seq, Time: j.now(), Path: p})
	for _, w := range j.watchers {
		if w.cfg.Path == "/" || p == "/" || within(p, w.cfg.Path) || within(w.cfg.Path, p) {
			w.markLost(j.seq)
		}
	}
	for s := range j.subs {
		s.markLost()
	}
}

// Entry is one item of AppendAll: an event, or (Lost set) a loss of the
// events under the path Lost.
type Entry struct {
	Event Event
	Lost  string
}

// AppendAll appends each entry in order (Append, or Lost). The hooks hear
// of every entry first and are waited for once, not once an entry: a run
// of outside changes costs one wait.
func (j *Journal) AppendAll(entries []Entry) {
	for _, en := range entries {
		if en.Lost != "" {
			j.hooks.run(Event{Path: en.Lost}, true, false)
		} else {
			j.hooks.run(en.Event, false, false)
		}
	}
	j.hooks.settle()
	for _, en := range entries {
		if en.Lost != "" {
			j.addLost(en.Lost)
		} else {
			j.add(en.Event)
		}
	}
}

// Dropped is how many events watchers (a full buffer drops its oldest) and
// subscriptions (a reader behind) could not keep, since the journal began.
func (j *Journal) Dropped() uint64 { return j.dropped.Load() }

// Overflows is how many times events were lost before the journal (Lost:
// the kernel's queue overflowed).
func (j *Journal) Overflows() uint64 { return j.overflows.Load() }

// Scan calls fn with every kept event after seq, in order, until fn
// returns false: those before the ring from the store, then the ring's.
// lost says that events after seq were no longer kept (retention, or the
// ring of a journal without a store), so what fn saw is not all that
// happened after seq.
func (j *Journal) Scan(ctx context.Context, seq uint64, fn func(Event) bool) (lost bool, err error) {
	j.mu.Lock()
	oldest := j.ringOldest()
	j.mu.Unlock()
	if j.store != nil && seq+1 < oldest {
		if so := j.store.Oldest(); so == 0 || seq+1 < so {
			lost = true
		}
		more := true
		err := j.store.Scan(ctx, seq, oldest-1, func(e Event) bool {
			seq = e.Seq
			if e.Type == "" {
				lost = true // a loss marker: events were lost here
				return true
			}
			more = fn(e)
			return more
		})
		if err != nil || !more {
			return lost, err
		}
		seq = max(seq, oldest-1)
	}
	for {
		j.mu.Lock()
		if j.store != nil && seq+1 < j.ringOldest() {
			// The ring moved on while fn ran: the rest is in the store.
			j.mu.Unlock()
			l, err := j.Scan(ctx, seq, fn)
			return lost || l, err
		}
		events, l := j.sinceLocked(seq, 1024)
		j.mu.Unlock()
		lost = lost || l
		for _, e := range events {
			if !fn(e) {
				return lost, nil
			}
			seq = e.Seq
		}
		if len(events) < 1024 {
			return lost, ctx.Err()
		}
	}
}

// Oldest is the oldest seq still kept: a reader after an older one has
// lost events.
func (j *Journal) Oldest() uint64 {
	j.mu.Lock()
	oldest := j.ringOldest()
	j.mu.Unlock()
	if j.store != nil {
		if so := j.store.Oldest(); so != 0 && so < oldest {
			return so
		}
	}
	return oldest
}

// SeqAt is the seq of the first kept event at or after t, 0 when there is
// none.
func (j *Journal) SeqAt(t time.Time) (uint64, error) {
	if j.store != nil {
		if s, err := j.store.SeqAt(t); err != nil || s != 0 {
			return s, err
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	for i := j.ringOldest(); i <= j.seq; i++ {
		if e := j.ring[(i-j.base-1)%RingSize]; !e.Time.Before(t) {
			return e.Seq, nil
		}
	}
	return 0, nil
}
