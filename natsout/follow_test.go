package natsout

import (
	"context"
	"errors"
	"testing"
	"time"

	"sandfs/natsout/natstest"
)

var errEnough = errors.New("enough")

// follow reads n messages (then stops, the n-th unacked).
func follow(t *testing.T, url, host, sandbox, durable string, n int) []Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var got []Message
	err := Follow(ctx, url, host, sandbox, durable, func(m Message) error {
		got = append(got, m)
		if len(got) == n {
			return errEnough
		}
		return nil
	})
	if !errors.Is(err, errEnough) {
		t.Fatalf("follow: %v after %d messages", err, len(got))
	}
	return got
}

// fleet watch's reader: filters by host and sandbox, and a durable
// consumer resumes after what it acked.
func TestFollow(t *testing.T) {
	b := natstest.Start(t)
	a, c := sandbox(t, "alpha"), sandbox(t, "beta")
	p := start(t, b, "h1", a, c)
	defer p.Close()
	burst(t, a.Journal, 0, 20, time.Second)
	burst(t, c.Journal, 0, 10, time.Second)
	waitCount(t, b, 30)

	if got := follow(t, b.URL(), "", "beta", "", 10); got[0].Sandbox != "beta" || got[9].Seq != 10 {
		t.Fatalf("beta: %+v", got)
	}
	if got := follow(t, b.URL(), "h1", "", "", 30); len(got) != 30 {
		t.Fatalf("h1: %d", len(got))
	}
	// A durable consumer: 5 read (the 5th not acked), then resume at it.
	first := follow(t, b.URL(), "", "alpha", "w1", 5)
	next := follow(t, b.URL(), "", "alpha", "w1", 16)
	if first[4].Seq != 5 || next[0].Seq != 5 || next[15].Seq != 20 {
		t.Fatalf("resume: first ends %d, next %d..%d", first[4].Seq, next[0].Seq, next[15].Seq)
	}
	for i, m := range next {
		if m.Sandbox != "alpha" || m.Seq != uint64(5+i) {
			t.Fatalf("next[%d]: %+v", i, m)
		}
	}
}
