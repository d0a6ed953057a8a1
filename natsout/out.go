package natsout

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core/journal"
)

// out is the publisher of one sandbox.
type out struct {
	p          *Publisher
	src        Source
	wake       chan struct{}
	removeHook func()
	cancel     context.CancelFunc // ends run (Publisher.Remove)
	done       chan struct{}      // closed when run returned

	mu                      sync.Mutex
	cursor, saved           uint64
	published, failed, lost uint64
	duplicates              uint64
}

func (o *out) stats() Stats {
	seq := o.src.Journal.Seq()
	o.mu.Lock()
	defer o.mu.Unlock()
	s := Stats{Published: o.published, Failed: o.failed, Lost: o.lost, Duplicate: o.duplicates}
	if seq > o.cursor {
		s.Backlog = seq - o.cursor
	}
	return s
}

func (o *out) run(ctx context.Context) {
	defer o.removeHook()
	log := o.p.cfg.Log.With("sandbox", o.src.Name)
	if v, err := o.src.Meta.Meta(CursorKey); err != nil {
		log.Warn("events: reading the published cursor", "err", err)
	} else if v != "" {
		c, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			log.Warn("events: a bad published cursor; publishing from the oldest kept", "cursor", v)
		}
		o.mu.Lock()
		o.cursor, o.saved = c, c
		o.mu.Unlock()
	}
	defer o.save(log)
	for {
		n, err := o.drain(ctx, log)
		o.save(log)
		if ctx.Err() != nil {
			return
		}
		wait := idleRescan
		switch {
		case err != nil:
			wait = retryWait
		case n == 0:
			// A hook wakes before its event is stored: look again soon.
			wait = 20 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-o.wake:
			if err != nil { // the broker is away: no faster than retryWait
				select {
				case <-ctx.Done():
					return
				case <-time.After(retryWait):
				}
			}
		case <-time.After(wait):
		}
	}
}

// drain publishes every kept event after the cursor, in order, until one
// fails. n is how many it published. Up to inFlight publishes wait for
// their acks at once (one connection: the stream stores them in the order
// sent); the cursor moves only over a run of acked events, so after a
// failure the next drain sends again from the first one not acked, and the
// stream drops those it already has by their ids.
func (o *out) drain(ctx context.Context, log interface {
	Warn(string, ...any)
	Info(string, ...any)
}) (n int, err error) {
	j := o.src.Journal
	if j.Seq() <= o.cursor {
		return 0, nil
	}
	if err := o.p.ensureStream(ctx); err != nil {
		o.count(0, 1)
		return 0, err
	}
	if oldest := j.Oldest(); o.cursor+1 < oldest && o.cursor != 0 {
		lost := oldest - 1 - o.cursor
		log.Warn("events: the journal no longer keeps events that were never published; publishing from the oldest kept",
			"lost", lost, "cursor", o.cursor, "oldest", oldest)
		o.mu.Lock()
		o.lost += lost
		o.mu.Unlock()
	}
	var win []pending // in seq order
	// settle waits for the oldest pending ack and moves the cursor over it.
	settle := func() error {
		p := win[0]
		if p.f != nil {
			dup := false
			select {
			case ack := <-p.f.Ok():
				dup = ack != nil && ack.Duplicate
			case e := <-p.f.Err():
				return e
			case <-ctx.Done():
				return ctx.Err()
			}
			n++
			if dup {
				o.duplicate(log, p.seq) // stored before: not published again
			} else {
				o.count(1, 0)
			}
		}
		win = win[1:]
		o.mu.Lock()
		o.cursor = p.seq
		o.mu.Unlock()
		if n > 0 && n%cursorEvery == 0 && p.f != nil {
			o.save(log)
		}
		return nil
	}
	_, serr := j.Scan(ctx, o.cursor, func(e journal.Event) bool {
		p := pending{seq: e.Seq}
		if re, ok := journal.Reportable(e); ok {
			if p.f, err = o.publish(re); err != nil {
				return false
			}
		}
		win = append(win, p)
		for len(win) >= inFlight && err == nil {
			err = settle()
		}
		return err == nil
	})
	for len(win) > 0 && err == nil {
		err = settle()
	}
	if err != nil {
		o.count(0, 1)
		return n, err
	}
	if serr != nil && !errors.Is(serr, context.Canceled) {
		return n, serr
	}
	return n, nil
}

// pending is an event sent and not yet acked (f nil: one not published, an
// unreportable name).
type pending struct {
	seq uint64
	f   jetstream.PubAckFuture
}

func (o *out) publish(e journal.Event) (jetstream.PubAckFuture, error) {
	host := o.p.cfg.Host
	data, err := json.Marshal(message(host, o.src.Name, e))
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(Subject(host, o.src.Name, e.Type))
	msg.Data = data
	msg.Header.Set(nats.MsgIdHdr, MsgID(host, o.src.Name, e.Seq))
	return o.p.js.PublishMsgAsync(msg)
}

// MsgID is the Nats-Msg-Id of one event.
func MsgID(host, sandbox string, seq uint64) string {
	return host + "/" + sandbox + "/" + strconv.FormatUint(seq, 10)
}

func (o *out) count(published, failed uint64) {
	o.mu.Lock()
	o.published += published
	o.failed += failed
	o.mu.Unlock()
}

// save stores the cursor if it moved.
func (o *out) save(log interface{ Warn(string, ...any) }) {
	o.mu.Lock()
	c := o.cursor
	o.mu.Unlock()
	if c == o.saved {
		return
	}
	if err := o.src.Meta.SetMeta(CursorKey, strconv.FormatUint(c, 10)); err != nil {
		log.Warn("events: saving the published cursor", "err", err)
		return
	}
	o.saved = c
}

// duplicate counts a message the stream acked as a duplicate of one it
// had (its id, HOST/SANDBOX/SEQ, seen within the duplicate window): it was
// not stored again. Said once in the log: after a restart that republishes
// what was acked before its cursor was saved, it is expected; otherwise
// another publisher uses this host's name.
func (o *out) duplicate(log interface{ Info(string, ...any) }, seq uint64) {
	o.mu.Lock()
	o.duplicates++
	first := o.duplicates == 1
	o.mu.Unlock()
	if first {
		log.Info("events: the stream already had a message of this id (not stored again; counted in sandfs_events_nats_duplicate_total)", "seq", seq)
	}
}
