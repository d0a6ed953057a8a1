package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"sandfs/natsout"
)

// # Moves
//
// A move hands a lease from the host serving the sandbox to another (the
// daemon's move.go says the whole of it). Here are the placement's parts:
//
//   - Ping asks a host, by name, whether it takes a sandbox in, before
//     anything changes: a request on HostSubject(host) naming the
//     sandbox and its identity, answered by that host's AnswerPings (nothing, or why not:
//     *RefusedError). No host of that name: ErrNoHost at once (the broker
//     knows no one listens).
//   - Handoff(..., with) writes the new holder "moving" with the
//     checkpoint handed over (Record.Checkpoint, Seq, From) and no lease.
//   - WatchMoves tells this host of every such record naming it, from a
//     watch of the bucket of its own (a restart replays the bucket, so a
//     handoff made while this host was down is heard at its start).
//   - While the new holder takes the sandbox up, KeepHanded writes the
//     handed record again every TTL/3, so a take-up longer than the TTL
//     does not let the key expire.
//   - The new holder's Acquire takes the key over (it names this host),
//     then Note writes what it fetched; a host that cannot take it up
//     writes why (Refuse), and the old host answers with it.

// HostSubject is where a host answers Ping: outside the stream's
// subjects (natsout.StreamSubjects), so that no ping is stored and only a
// host answers.
func HostSubject(host string) string { return "sandfs-placement.host." + natsout.EncodeName(host) }

// ErrNoHost is a Ping no host of that name answered.
var ErrNoHost = errors.New("placement: no daemon answers as that host")

// pingWait bounds a Ping.
const pingWait = 5 * time.Second

// RefusedError is a host's answer that it does not take the sandbox in.
type RefusedError struct{ Host, Why string }

func (e *RefusedError) Error() string {
	return "host " + e.Host + " does not take the sandbox in: " + e.Why
}

// Ping asks host whether it takes the sandbox name, of identity (its
// root's mark; "" when it has none), in: nil when it does, *RefusedError,
// ErrNoHost, or ErrBroker. The identity lets a host that kept an old root
// of the sandbox say it takes it up there.
func (l *Leases) Ping(ctx context.Context, host, name, identity string) error {
	ctx, cancel := context.WithTimeout(ctx, pingWait)
	defer cancel()
	body := name
	if identity != "" {
		body += " " + identity // a name is a DNS label: no space in it
	}
	m, err := l.nc.RequestWithContext(ctx, HostSubject(host), []byte(body))
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return fmt.Errorf("%w: %s", ErrNoHost, host)
	case err != nil:
		return brokerErr("ping", host, err)
	case len(m.Data) > 0:
		return &RefusedError{Host: host, Why: string(m.Data)}
	}
	return nil
}

// AnswerPings answers Ping for this host: refuse says why it does not
// take the sandbox named in, of that identity (nil: it does).
func (l *Leases) AnswerPings(refuse func(name, identity string) error) error {
	_, err := l.nc.Subscribe(HostSubject(l.cfg.Host), func(m *nats.Msg) {
		var data []byte
		name, identity, _ := strings.Cut(string(m.Data), " ")
		if err := refuse(name, identity); err != nil {
			data = []byte(err.Error())
		}
		_ = m.Respond(data)
	})
	if err == nil {
		// The broker knows of the subscription before this returns (a
		// broker away hears of it when it is back).
		_ = l.nc.FlushTimeout(opTimeout)
	}
	return err
}

// WatchMoves calls fn (in the watch's goroutine: it must not wait) for
// every record handed to this host that it has not taken up yet: state
// moving, no lease, a checkpoint, no refusal.
func (l *Leases) WatchMoves(fn func(Record)) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		wait := 250 * time.Millisecond
		for l.ctx.Err() == nil {
			err := l.watchMovesOnce(fn)
			if l.ctx.Err() != nil {
				return
			}
			l.cfg.Log.Debug("placement: watching for moves again", "err", err)
			select {
			case <-l.ctx.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, 5*time.Second)
		}
	}()
}

func (l *Leases) watchMovesOnce(fn func(Record)) error {
	kv, err := l.kv(l.ctx)
	if err != nil {
		return err
	}
	w, err := kv.WatchAll(l.ctx)
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case <-l.ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("the watch ended")
			}
			if e == nil || e.Operation() != jetstream.KeyValuePut {
				continue
			}
			var r Record
			if json.Unmarshal(e.Value(), &r) != nil {
				continue
			}
			if r.Host == l.cfg.Host && r.State == Moving && r.Lease == "" && r.Checkpoint != "" && r.Error == "" {
				fn(r)
			}
		}
	}
}

// Note changes the record of a lease this daemon holds (a move's fields).
func (l *Leases) Note(ctx context.Context, name string, fn func(*Record)) error {
	l.mu.Lock()
	ls := l.held[name]
	l.mu.Unlock()
	if ls == nil {
		return ErrNotHeld
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return ls.write(ctx, fn)
}

// Refuse writes why this host does not take up the sandbox handed to it
// at checkpoint cp (the record stays "moving", naming this host, for the
// operator). A record that no longer is that handoff is left alone.
func (l *Leases) Refuse(ctx context.Context, name, cp, why string) error {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	kv, err := l.kv(ctx)
	if err != nil {
		return brokerErr("refuse", name, err)
	}
	e, err := kv.Get(ctx, KeyOf(name))
	if err != nil {
		return brokerErr("refuse", name, err)
	}
	var r Record
	if json.Unmarshal(e.Value(), &r) != nil || r.Host != l.cfg.Host || r.Lease != "" || r.Checkpoint != cp {
		return nil
	}
	r.Error = why
	data, _ := json.Marshal(r)
	if _, err := kv.Update(ctx, KeyOf(name), data, e.Revision()); err != nil {
		return brokerErr("refuse", name, err)
	}
	return nil
}

// KeepHanded keeps the record handed to this host at checkpoint cp
// written (every TTL/3) while this host takes the sandbox up, so the key
// does not expire under a take-up longer than the TTL (other hosts go on
// answering 503). It ends at stop, or once the record is no longer that
// handoff (this host's Acquire took it over, or it was refused).
func (l *Leases) KeepHanded(name, cp string) (stop func()) {
	ctx, cancel := context.WithCancel(l.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(l.TTL() / 3):
			}
			if !l.rewriteHanded(ctx, name, cp) {
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// rewriteHanded writes the handed record again on its revision: false
// when it is no longer the handoff to this host at cp.
func (l *Leases) rewriteHanded(ctx context.Context, name, cp string) bool {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	kv, err := l.kv(ctx)
	if err != nil {
		return true // the broker away: tried again
	}
	e, err := kv.Get(ctx, KeyOf(name))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return false
	} else if err != nil {
		return true
	}
	var r Record
	if json.Unmarshal(e.Value(), &r) != nil || r.Host != l.cfg.Host || r.Lease != "" || r.Checkpoint != cp || r.Error != "" {
		return false
	}
	r.Renewed = time.Now().UTC()
	data, _ := json.Marshal(r)
	_, _ = kv.Update(ctx, KeyOf(name), data, e.Revision()) // a mismatch: the next look says whose it is
	return true
}
