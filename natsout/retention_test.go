package natsout

import (
	"bytes"
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sandfs/core/history"
	"sandfs/core/journal"
	"sandfs/natsout/natstest"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// A cursor older than what the journal keeps (retention pruned events that
// were never published) logs how many were lost, counts them, and publishes
// from the oldest kept, in order.
func TestPublishAfterRetention(t *testing.T) {
	h, j := natstest.Journal(t, history.Retention{MaxEvents: 100})
	const n = journal.RingSize + 500
	burst(t, j, 0, n, time.Second)
	if err := h.SaveManifest(history.Manifest{Seq: j.Seq()}); err != nil { // lets retention prune
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for j.Oldest() <= 500 {
		if time.Now().After(deadline) {
			t.Fatalf("retention kept from %d", j.Oldest())
		}
		time.Sleep(50 * time.Millisecond)
	}
	oldest := j.Oldest()
	if err := h.SetMeta(CursorKey, "5"); err != nil {
		t.Fatal(err)
	}

	b := natstest.Start(t)
	var logs syncBuf
	start := time.Now()
	p, err := Start(context.Background(), Config{URL: b.URL(), Host: "h", Log: slog.New(slog.NewTextHandler(&logs, nil))},
		[]Source{{Name: "s", Journal: j, Meta: h}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := n - int(oldest) + 1
	for p.Stats()["s"].Published < uint64(want) && time.Since(start) < 30*time.Second {
		time.Sleep(time.Millisecond)
	}
	took := time.Since(start) // the publish rate, connection and stream creation included
	msgs := waitCount(t, b, want)
	for i, g := range msgs {
		if g.m.Seq != oldest+uint64(i) {
			t.Fatalf("message %d: seq %d, want %d", i, g.m.Seq, oldest+uint64(i))
		}
	}
	lost := oldest - 1 - 5
	if st := p.Stats()["s"]; st.Lost != lost || st.Backlog != 0 {
		t.Fatalf("stats %+v, want %d lost", st, lost)
	}
	if l := logs.String(); !strings.Contains(l, "no longer keeps events that were never published") ||
		!strings.Contains(l, "lost="+strconv.FormatUint(lost, 10)) {
		t.Fatalf("log: %s", l)
	}
	t.Logf("retention kept from %d: %d lost, %d published in %v (%.0f/s)", oldest, lost, want, took, float64(want)/took.Seconds())
}
