package placement

import (
	"context"
	"errors"
	"testing"
	"time"

	"sandfs/natsout/natstest"
)

// TestMoveHandoff: a Ping of a host nobody runs is ErrNoHost, one whose
// host refuses is *RefusedError; a handoff with its checkpoint reaches the
// new host's WatchMoves; the handed record is kept past the TTL while
// KeepHanded runs; a Refuse is read back by the old host; and a take-up's
// Acquire and Note are what the old host's Lookup reads.
func TestMoveHandoff(t *testing.T) {
	b := natstest.Start(t)
	h1, h2 := startHost(t, b, "h1"), startHost(t, b, "h2")
	ctx := context.Background()
	if err := h1.Ping(ctx, "nobody", "x", ""); !errors.Is(err, ErrNoHost) {
		t.Fatalf("ping of no host: %v", err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(h2.AnswerPings(func(name, identity string) error {
		if name == "taken" {
			return errors.New("served here")
		}
		if name == "kept" && identity != "id1" {
			return errors.New("another sandbox's root is here: " + identity)
		}
		return nil
	}))
	var refused *RefusedError
	if err := h1.Ping(ctx, "h2", "taken", ""); !errors.As(err, &refused) || refused.Why != "served here" {
		t.Fatalf("ping of a refusing host: %v", err)
	}
	if err := h1.Ping(ctx, "h2", "kept", "id2"); !errors.As(err, &refused) || refused.Why != "another sandbox's root is here: id2" {
		t.Fatalf("ping with another identity: %v", err)
	}
	must(h1.Ping(ctx, "h2", "x", ""))
	must(h1.Ping(ctx, "h2", "kept", "id1"))

	heard := make(chan Record, 8)
	h2.WatchMoves(func(r Record) { heard <- r })
	for _, name := range []string{"x", "y"} {
		acquire(t, h1, name)
		must(h1.Handoff(ctx, name, "h2", "", func(r *Record) { r.Checkpoint, r.Seq, r.From = "cp_"+name, 7, "h1" }))
	}
	got := map[string]Record{}
	for len(got) < 2 {
		select {
		case r := <-heard:
			got[r.Name] = r
		case <-time.After(60 * time.Second):
			t.Fatalf("h2 heard %v of the handoffs", got)
		}
	}
	if r := got["x"]; r.Host != "h2" || r.State != Moving || r.Lease != "" || r.Checkpoint != "cp_x" || r.Seq != 7 || r.From != "h1" {
		t.Fatalf("handoff heard: %+v", r)
	}

	// y: refused, and the old host reads why (before its key expires:
	// nobody keeps it).
	must(h2.Refuse(ctx, "y", "cp_y", "no room"))
	eventually(t, "h1 reads y refused", func() bool {
		r, ok := h1.Lookup("y")
		return ok && r.Host == "h2" && r.Error == "no room"
	})
	// x: kept past the TTL while taken up, then taken over and noted.
	stop := h2.KeepHanded("x", "cp_x")
	time.Sleep(2 * testTTL) // longer than the TTL: the key would expire unkept
	stop()
	if r, ok := h1.Lookup("x"); !ok || r.Host != "h2" || r.Checkpoint != "cp_x" {
		t.Fatalf("x after 2 TTL kept: %+v %v", r, ok)
	}
	acquire(t, h2, "x")
	must(h2.Note(ctx, "x", func(r *Record) { r.Checkpoint, r.Fetched = "cp_x", &Fetched{Objects: 3, Bytes: 30} }))
	eventually(t, "h1 reads x served by h2 with what it fetched", func() bool {
		r, ok := h1.Lookup("x")
		return ok && r.Host == "h2" && r.State == Serving && r.Checkpoint == "cp_x" && r.Fetched != nil && r.Fetched.Objects == 3
	})

	if err := h2.Note(ctx, "y", nil); !errors.Is(err, ErrNotHeld) {
		t.Fatalf("Note of a lease not held: %v", err)
	}
}
