package placement

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// lease is one lease held, and its renewal.
type lease struct {
	l         *Leases
	name, key string
	ctx       context.Context
	cancel    context.CancelFunc
	done      chan struct{}

	op sync.Mutex // one write of the key at a time: a renewal, SetMoving, Handoff
	mu sync.Mutex // rec, rev, sent
	// rec is the value last written, rev its revision, sent when the
	// write the broker took was sent: the lease lives at least until
	// sent + TTL on the broker.
	rec  Record
	rev  uint64
	sent time.Time
}

// errAdopted: the key's revision had moved by this holding's own write
// (its ack lost); the next renewal goes at once.
var errAdopted = errors.New("placement: adopted this holding's own later revision")

// hold starts renewing a lease just taken.
func (l *Leases) hold(rec Record, rev uint64, sent time.Time) {
	ctx, cancel := context.WithCancel(l.ctx)
	ls := &lease{l: l, name: rec.Name, key: KeyOf(rec.Name), ctx: ctx, cancel: cancel, done: make(chan struct{}),
		rec: rec, rev: rev, sent: sent}
	l.mu.Lock()
	l.held[rec.Name] = ls
	l.mu.Unlock()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		defer close(ls.done)
		ls.keep()
	}()
}

// stop ends the renewal and waits for it.
func (ls *lease) stop() {
	ls.cancel()
	<-ls.done
}

// keep renews the lease every TTL/3 (every TTL/12 after a failure) until
// it is released, taken by another host, or 3/4 of the TTL passed since
// the last renewal the broker took was sent.
func (ls *lease) keep() {
	failing := false
	next := ls.l.TTL() / 3
	for {
		ttl := ls.l.TTL()
		ls.mu.Lock()
		deadline := ls.sent.Add(ttl - ttl/4)
		ls.mu.Unlock()
		t := time.NewTimer(min(next, time.Until(deadline)))
		select {
		case <-ls.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if !time.Now().Before(deadline) {
			ls.lose(Loss{})
			return
		}
		err := ls.renew(deadline)
		var held *HeldError
		switch {
		case err == nil:
			if failing {
				ls.l.cfg.Log.Info("placement: the lease is renewed again", "sandbox", ls.name)
			}
			failing, next = false, ttl/3
		case errors.As(err, &held):
			ls.lose(Loss{Taken: true, By: held.Record})
			return
		case errors.Is(err, errAdopted):
			next = 0
		default:
			if ls.ctx.Err() != nil {
				return
			}
			if !failing {
				ls.l.cfg.Log.Warn("placement: renewing the lease failed; the sandbox stays served until the lease would expire",
					"sandbox", ls.name, "until", deadline.Format(time.RFC3339Nano), "err", err)
			}
			failing, next = true, ttl/12
		}
	}
}

// renew writes the lease again on its revision. A revision that moved is
// looked at: this holding's own (adopted), gone (created again), or
// another's (*HeldError).
func (ls *lease) renew(deadline time.Time) error {
	end := time.Now().Add(ls.l.TTL() / 3)
	if deadline.Before(end) {
		end = deadline
	}
	ctx, cancel := context.WithDeadline(ls.ctx, end)
	defer cancel()
	err := ls.write(ctx, nil)
	if err == nil || !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return err
	}
	kv, err := ls.l.kv(ctx)
	if err != nil {
		return err
	}
	e, err := kv.Get(ctx, ls.key)
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return ls.recreate(ctx, kv)
	}
	if err != nil {
		return err
	}
	var cur Record
	_ = json.Unmarshal(e.Value(), &cur)
	ls.mu.Lock()
	mine := cur.Lease != "" && cur.Lease == ls.rec.Lease
	if mine {
		ls.rev = e.Revision()
	}
	ls.mu.Unlock()
	if mine {
		return errAdopted
	}
	if cur.Name == "" {
		cur.Name = ls.name
	}
	return &HeldError{Record: cur}
}

// recreate takes the lease again when its key went under this holding
// (deleted by hand, or expired early): nobody else holds it.
func (ls *lease) recreate(ctx context.Context, kv jetstream.KeyValue) error {
	ls.op.Lock()
	defer ls.op.Unlock()
	ls.mu.Lock()
	rec := ls.rec
	ls.mu.Unlock()
	rec.Renewed = time.Now().UTC()
	data, _ := json.Marshal(rec)
	sent := time.Now()
	rev, err := kv.Create(ctx, ls.key, data)
	if err != nil {
		return err // taken meanwhile: the next renewal finds by whom
	}
	ls.mu.Lock()
	ls.rec, ls.rev, ls.sent = rec, rev, sent
	ls.mu.Unlock()
	ls.l.cfg.Log.Warn("placement: the lease's key had gone while held; taken again", "sandbox", ls.name)
	return nil
}

// write writes the record (changed by fn, when not nil) on the revision
// last written.
func (ls *lease) write(ctx context.Context, fn func(*Record)) error {
	kv, err := ls.l.kv(ctx)
	if err != nil {
		return err
	}
	ls.op.Lock()
	defer ls.op.Unlock()
	ls.mu.Lock()
	rec, rev := ls.rec, ls.rev
	ls.mu.Unlock()
	if fn != nil {
		fn(&rec)
	}
	rec.Renewed = time.Now().UTC()
	data, _ := json.Marshal(rec)
	sent := time.Now()
	nrev, err := kv.Update(ctx, ls.key, data, rev)
	if err != nil {
		return err
	}
	ls.mu.Lock()
	ls.rec, ls.rev, ls.sent = rec, nrev, sent
	ls.mu.Unlock()
	return nil
}

// lose gives up the lease (the renewal ends after it) and tells
// Config.Lost, unless it was released meanwhile.
func (ls *lease) lose(why Loss) {
	l := ls.l
	l.mu.Lock()
	mine := l.held[ls.name] == ls
	if mine {
		delete(l.held, ls.name)
	}
	l.mu.Unlock()
	if !mine {
		return
	}
	if why.Taken {
		l.cfg.Log.Warn("placement: another host took the lease; the sandbox is no longer served here",
			"sandbox", ls.name, "holder", why.By.Host, "holder_url", why.By.URL)
	} else {
		l.cfg.Log.Error("placement: the lease was not renewed in time (the broker did not answer); the sandbox is no longer served here, since another host may take it",
			"sandbox", ls.name)
	}
	if l.cfg.Lost != nil {
		go l.cfg.Lost(ls.name, why)
	}
}
