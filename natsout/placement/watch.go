package placement

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// seenRec is a record as the watch last heard it, and when.
type seenRec struct {
	rec Record
	at  time.Time
}

// watch keeps the bucket's keys in memory (Leases.seen), watching again
// after the broker went away.
func (l *Leases) watch(ctx context.Context) {
	wait := 250 * time.Millisecond
	for ctx.Err() == nil {
		err := l.watchOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		l.cfg.Log.Debug("placement: watching the bucket again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// watchOnce replays the bucket into a fresh map, puts it in place, and
// applies each change that follows until the watch ends.
func (l *Leases) watchOnce(ctx context.Context) error {
	kv, err := l.kv(ctx)
	if err != nil {
		return err
	}
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return err
	}
	defer w.Stop()
	fresh := map[string]seenRec{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("the watch ended")
			}
			l.mu.Lock()
			switch {
			case e == nil: // the replay is done
				l.seen, l.watched, fresh = fresh, true, nil
			case fresh != nil:
				apply(fresh, e)
			default:
				apply(l.seen, e)
			}
			l.mu.Unlock()
		}
	}
}

// apply is one change of the bucket.
func apply(m map[string]seenRec, e jetstream.KeyValueEntry) {
	if e.Operation() != jetstream.KeyValuePut {
		delete(m, e.Key()) // released, or expired (the server's marker)
		return
	}
	var r Record
	if json.Unmarshal(e.Value(), &r) != nil {
		delete(m, e.Key())
		return
	}
	m[e.Key()] = seenRec{rec: r, at: time.Now()}
}

// Lookup is the holder of name as the watch knows it, from memory (it
// never waits on the broker): false when no host holds it, or the watch
// has not heard of it within 1.5 TTL.
func (l *Leases) Lookup(name string) (Record, bool) {
	l.mu.Lock()
	s, ok := l.seen[KeyOf(name)]
	ttl := l.ttl
	l.mu.Unlock()
	if !ok || time.Since(s.at) > ttl+ttl/2 {
		return Record{}, false
	}
	return s.rec, true
}

// Watching reports whether the watch has replayed the bucket once.
func (l *Leases) Watching() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.watched
}
