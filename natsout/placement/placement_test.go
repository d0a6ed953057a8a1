package placement

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/natsout/natstest"
)

const testTTL = 2 * time.Second

// host is one host's Leases in a test, and what its Lost told.
type host struct {
	*Leases
	lost chan lostCall
}

type lostCall struct {
	name string
	why  Loss
}

func startHost(t *testing.T, b *natstest.Broker, name string) *host {
	t.Helper()
	h := &host{lost: make(chan lostCall, 8)}
	l, err := Start(context.Background(), Config{URL: b.URL(), Host: name, Self: "http://" + name + ":7420", TTL: testTTL,
		Log:  slog.New(slog.NewTextHandler(tlog{t}, nil)),
		Lost: func(n string, why Loss) { h.lost <- lostCall{n, why} }})
	if err != nil {
		t.Fatal(err)
	}
	h.Leases = l
	t.Cleanup(l.Close)
	return h
}

// tlog writes a host's log to the test's.
type tlog struct{ t *testing.T }

func (w tlog) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

func acquire(t *testing.T, h *host, name string) {
	t.Helper()
	if err := h.Acquire(context.Background(), name); err != nil {
		t.Fatalf("%s: acquire %s: %v", h.Host(), name, err)
	}
}

// refused wants h's Acquire of name refused, naming holder.
func refused(t *testing.T, h *host, name, holder string) {
	t.Helper()
	err := h.Acquire(context.Background(), name)
	var held *HeldError
	if !errors.As(err, &held) {
		t.Fatalf("%s: acquire %s: %v, want it held by %s", h.Host(), name, err, holder)
	}
	if held.Record.Host != holder || held.Record.URL != "http://"+holder+":7420" || held.Record.Name != name {
		t.Fatalf("%s: acquire %s: held by %+v, want %s", h.Host(), name, held.Record, holder)
	}
}

// eventually polls cond for up to 60 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after 60 s: %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func lostOf(t *testing.T, h *host) lostCall {
	t.Helper()
	select {
	case c := <-h.lost:
		return c
	case <-time.After(60 * time.Second):
		t.Fatalf("%s: no lease lost after 60 s", h.Host())
	}
	return lostCall{}
}

func TestAcquireTwiceRefusedWithHolder(t *testing.T) {
	b := natstest.Start(t)
	a, c := startHost(t, b, "alpha"), startHost(t, b, "beta")
	acquire(t, a, "web")
	refused(t, c, "web", "alpha")
	if err := a.Acquire(context.Background(), "web"); !errors.Is(err, ErrHeldHere) {
		t.Fatalf("acquire of a lease held here: %v, want ErrHeldHere", err)
	}
	acquire(t, c, "db") // another name is another lease
	refused(t, a, "db", "beta")
	eventually(t, "beta's watch names alpha as web's holder", func() bool {
		r, ok := c.Lookup("web")
		return ok && r.Host == "alpha" && r.State == Serving && r.URL == "http://alpha:7420"
	})
	if _, ok := c.Lookup("nobody"); ok {
		t.Fatal("a name nobody holds has a holder")
	}
}

// Renewals keep the lease past many TTLs.
func TestRenewKeepsLease(t *testing.T) {
	b := natstest.Start(t)
	a, c := startHost(t, b, "alpha"), startHost(t, b, "beta")
	acquire(t, a, "web")
	end := time.Now().Add(3 * testTTL)
	for time.Now().Before(end) {
		refused(t, c, "web", "alpha")
		time.Sleep(testTTL / 4)
	}
	select {
	case l := <-a.lost:
		t.Fatalf("lost %+v while renewing", l)
	default:
	}
	if !a.Holds("web") {
		t.Fatal("alpha does not hold web any more")
	}
}

// A host that stops renewing (its broker connection gone) gives the
// lease up itself, and after the TTL another host takes it.
func TestUnrenewedLeaseExpires(t *testing.T) {
	b := natstest.Start(t)
	a, c := startHost(t, b, "alpha"), startHost(t, b, "beta")
	acquire(t, a, "web")
	eventually(t, "beta sees alpha's lease", func() bool { _, ok := c.Lookup("web"); return ok })
	a.nc.Close() // alpha can no longer reach the broker
	if l := lostOf(t, a); l.name != "web" || l.why.Taken {
		t.Fatalf("alpha lost %+v, want web expired", l)
	}
	if a.Holds("web") {
		t.Fatal("alpha still holds web")
	}
	eventually(t, "beta acquires web once the TTL ran out", func() bool {
		return c.Acquire(context.Background(), "web") == nil
	})
	eventually(t, "beta's watch names beta", func() bool { r, ok := c.Lookup("web"); return ok && r.Host == "beta" })
}

// A renewal that finds the key written by another holding loses the lease.
func TestCASLossDetected(t *testing.T) {
	b := natstest.Start(t)
	a := startHost(t, b, "alpha")
	acquire(t, a, "web")
	kv := rawKV(t, b)
	data, _ := json.Marshal(Record{Name: "web", Host: "gamma", URL: "http://gamma:7420", State: Serving, Lease: "other"})
	if _, err := kv.Put(context.Background(), KeyOf("web"), data); err != nil {
		t.Fatal(err)
	}
	l := lostOf(t, a)
	if l.name != "web" || !l.why.Taken || l.why.By.Host != "gamma" {
		t.Fatalf("alpha lost %+v, want web taken by gamma", l)
	}
	if a.Holds("web") {
		t.Fatal("alpha still holds web")
	}
	// Released after the loss: gamma's key stays.
	if err := a.Release(context.Background(), "web"); err != nil {
		t.Fatal(err)
	}
	e, err := kv.Get(context.Background(), KeyOf("web"))
	if err != nil || !json.Valid(e.Value()) {
		t.Fatalf("gamma's key: %v", err)
	}
}

func TestReleaseFrees(t *testing.T) {
	b := natstest.Start(t)
	a, c := startHost(t, b, "alpha"), startHost(t, b, "beta")
	acquire(t, a, "web")
	eventually(t, "beta sees alpha's lease", func() bool { _, ok := c.Lookup("web"); return ok })
	if err := a.Release(context.Background(), "web"); err != nil {
		t.Fatal(err)
	}
	acquire(t, c, "web") // at once, no TTL to wait
	eventually(t, "alpha's watch names beta", func() bool { r, ok := a.Lookup("web"); return ok && r.Host == "beta" })
	if err := c.Release(context.Background(), "web"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the watch forgets a released lease", func() bool { _, ok := a.Lookup("web"); return !ok })
}

// A daemon started again under the same host name before the TTL ran out
// takes its earlier run's lease over; the earlier run loses it.
func TestSameHostTakesOver(t *testing.T) {
	b := natstest.Start(t)
	a1, a2 := startHost(t, b, "alpha"), startHost(t, b, "alpha")
	acquire(t, a1, "web")
	acquire(t, a2, "web")
	if l := lostOf(t, a1); !l.why.Taken || l.why.By.Host != "alpha" {
		t.Fatalf("the earlier run lost %+v, want taken by alpha", l)
	}
}

func TestMovingAndHandoff(t *testing.T) {
	b := natstest.Start(t)
	a, c := startHost(t, b, "alpha"), startHost(t, b, "beta")
	acquire(t, a, "web")
	if err := a.SetMoving(context.Background(), "web", true, "beta"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "beta sees web moving", func() bool { r, ok := c.Lookup("web"); return ok && r.State == Moving && r.To == "beta" })
	time.Sleep(testTTL) // renewals keep the state
	if r, ok := c.Lookup("web"); !ok || r.State != Moving {
		t.Fatalf("after renewals: %+v %v, want moving", r, ok)
	}
	if err := a.Handoff(context.Background(), "web", "beta", "http://beta:7420"); err != nil {
		t.Fatal(err)
	}
	if a.Holds("web") {
		t.Fatal("alpha holds web after its handoff")
	}
	acquire(t, c, "web") // handed to beta: beta's Acquire takes it over
	eventually(t, "web served by beta", func() bool { r, ok := a.Lookup("web"); return ok && r.Host == "beta" && r.State == Serving })
	if err := a.SetMoving(context.Background(), "web", true, ""); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("SetMoving of a lease not held: %v", err)
	}
}

// With no broker, Acquire says so at once and holds nothing.
func TestAcquireBrokerAway(t *testing.T) {
	b := natstest.Start(t)
	a := startHost(t, b, "alpha")
	b.Stop()
	err := a.Acquire(context.Background(), "web")
	if !errors.Is(err, ErrBroker) {
		t.Fatalf("acquire with the broker away: %v, want ErrBroker", err)
	}
	if a.Holds("web") {
		t.Fatal("holds a lease it could not take")
	}
	b.Restart()
	eventually(t, "acquire once the broker is back", func() bool { return a.Acquire(context.Background(), "web") == nil })
}

func rawKV(t *testing.T, b *natstest.Broker) jetstream.KeyValue {
	t.Helper()
	js := b.JetStream(t)
	kv, err := js.KeyValue(context.Background(), Bucket)
	if err != nil {
		t.Fatal(err)
	}
	return kv
}
