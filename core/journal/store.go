package journal

import (
	"context"
	"time"
)

// Store keeps a journal's events beyond its ring and across restarts
// (core/history is the one on disk). Append runs under the journal's lock
// and must not wait on a disk: the store batches. Scan and SeqAt may wait
// for the store to catch up with what was appended.
type Store interface {
	Append(e Event)
	Newest() uint64 // the newest seq kept when the store was opened
	Oldest() uint64 // the oldest seq kept now (0: none)
	Scan(ctx context.Context, after, until uint64, fn func(Event) bool) error
	SeqAt(t time.Time) (uint64, error)
	SaveWatchers([]WatcherRecord) error
	Watchers() ([]WatcherRecord, error)
}

// WatcherRecord is a watcher as a store keeps it, so that it outlives a
// restart with its id, and a cursor taken before it resumes.
type WatcherRecord struct {
	ID       string
	Config   Config
	Created  time.Time
	StartSeq uint64         // the journal's seq when the watcher began
	Refs     int            // references held, all clients together
	Aliases  map[string]int // reference id → references it holds (refs.go)
	Next     int            // the number of the last reference id given
}

// NewWith makes a journal whose events are also kept by st: numbering
// continues after st.Newest(), and the watchers st kept are live again,
// each hearing events from now on and answering an older cursor from st.
func NewWith(st Store) (*Journal, error) {
	j := New()
	j.store = st
	j.seq = st.Newest()
	j.base = j.seq
	recs, err := st.Watchers()
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		w := j.newWatcher(r.ID, r.Config, r.Created)
		w.restoreRefs(r)
		w.start = j.seq
		j.watchers[w.ID] = w
		j.byKey[w.key] = w
	}
	return j, nil
}

// saveWatchers gives the store the registry as it is now, outside j.mu
// (a store may take milliseconds); saves are serialized, each taking its
// snapshot inside, so the last one saved is the newest.
func (j *Journal) saveWatchers() {
	if j.store == nil {
		return
	}
	j.saveMu.Lock()
	defer j.saveMu.Unlock()
	j.mu.Lock()
	recs := make([]WatcherRecord, 0, len(j.watchers))
	for _, w := range j.watchers {
		recs = append(recs, w.record())
	}
	j.mu.Unlock()
	j.store.SaveWatchers(recs) // a failure: the registry is in memory still, and the store logs
}

// Store is the journal's store, nil for one kept in memory only.
func (j *Journal) Store() Store { return j.store }

// NumberAbove makes the journal, open on its store, number on above seq,
// as history.NumberAbove does to one closed: the events after its newest
// through seq were another journal's (the sandbox served on another host
// meanwhile, taken up again here), so one loss marker stands for them at
// seq. The ring and every watcher start again after it, as at an open on
// that store. It does so only while the journal's newest is at (the
// caller knows what it holds through at): otherwise, or without a store,
// the journal is left as it is and ok is false. A journal already at or
// past seq is left as it is. n is the seq the journal numbers after.
func (j *Journal) NumberAbove(seq, at uint64) (n uint64, ok bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.store == nil || j.seq != at {
		return j.seq, false
	}
	if j.seq >= seq {
		return j.seq, true
	}
	j.store.Append(Event{Seq: seq, Time: j.now(), Path: "/"})
	j.seq, j.base, j.ring = seq, seq, j.ring[:0]
	for _, w := range j.watchers {
		w.start = seq
	}
	return seq, true
}
