package watch

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestOutboxBounded: outside changes read into the outbox while nobody can
// append them (a flush under way holds the order lock) stop being queued
// at maxOutbox, and once the outbox has drained the watchers are told they
// lost events: memory stays bounded and nothing is dropped unsaid.
func TestOutboxBounded(t *testing.T) {
	s, root, w := watched(t)
	s.out.order.Lock() // the reader's flush waits: only claims read the kernel's queue now
	locked := true
	defer func() {
		if locked {
			s.out.order.Unlock()
		}
	}()
	made := 0
	for batch := 0; s.out.waiting.Load() < maxOutbox && batch < 1000; batch++ {
		for range 200 {
			made++
			if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d", made)), nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for range 8 { // each claim reads up to drainMax of the queue
			s.Claim("/claimed").Done()
		}
	}
	if got := s.out.waiting.Load(); got < maxOutbox {
		t.Fatalf("the outbox holds %d after %d outside creates, want it full (%d)", got, made, maxOutbox)
	}
	for range 1000 {
		made++
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%d", made)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for range 40 {
		s.Claim("/claimed").Done()
	}
	if got := s.out.waiting.Load(); got > maxOutbox {
		t.Errorf("the outbox holds %d, past its bound %d", got, maxOutbox)
	}
	s.out.order.Unlock()
	locked = false
	overflow := false
	for end := time.Now().Add(time.Minute); !overflow && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		b, _, err := w.Read(0, 0)
		if err != nil {
			t.Fatal(err)
		}
		overflow = b.Overflow
	}
	if !overflow {
		t.Errorf("%d outside creates, %d in the journal: the watcher was not told it lost events", made, s.h.Journal.Seq())
	}
}
