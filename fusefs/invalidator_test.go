package fusefs

import (
	"slices"
	"testing"
	"time"

	"sandfs/core/journal"
)

// TestInvalidator: the hook queues without blocking and one goroutine
// sends, what waited together once; settle returns once what was queued before it was sent, gives up
// after its bound when a notification blocks (and no later settle waits
// until the queue drains), and nothing is sent after close.
func TestInvalidator(t *testing.T) {
	removeB := journal.Event{Type: journal.Remove, Path: "/a/b", Origin: journal.External}
	sentB := []string{"content 10", "content 11", "entry 10 b"}

	t.Run("settle waits for what was queued", func(t *testing.T) {
		m, rec := invalidationTree(t, nil)
		v := newInvalidator(m)
		defer v.close()
		v.queue(removeB, false)
		v.settle()
		if got := rec.take(); !slices.Equal(got, sentB) {
			t.Errorf("notifies %q, want %q", got, sentB)
		}
		if m.root.GetChild("a").GetChild("b") != nil {
			t.Errorf("b is still in the tree")
		}
	})
	t.Run("the mirror's own events are not queued", func(t *testing.T) {
		m, rec := invalidationTree(t, nil)
		v := newInvalidator(m)
		defer v.close()
		v.queue(journal.Event{Type: journal.Remove, Path: "/a/b", Origin: journal.Mirror}, false)
		v.settle()
		if got := rec.take(); len(got) != 0 {
			t.Errorf("notifies %q, want none", got)
		}
		if m.root.GetChild("a").GetChild("b") == nil {
			t.Errorf("b was dropped")
		}
	})
	t.Run("a blocked notification bounds the wait", func(t *testing.T) {
		m, rec := invalidationTree(t, nil)
		rec.block = make(chan struct{})
		v := newInvalidator(m)
		v.wait = 50 * time.Millisecond
		v.queue(removeB, false)
		// The goroutine has taken b's remove and is blocked sending it.
		waitUntil(t, func() bool { v.mu.Lock(); defer v.mu.Unlock(); return len(v.q) == 0 })
		queued := make(chan struct{})
		go func() { // the hook never waits, however blocked the sender
			for range 10 {
				v.queue(journal.Event{Type: journal.Write, Path: "/a/c", Origin: journal.API}, false)
			}
			close(queued)
		}()
		<-queued
		v.settle() // gives up
		v.settle() // does not wait again while the queue has not drained
		if got := rec.take(); len(got) != 0 {
			t.Errorf("notifies %q sent while the first was blocked", got)
		}
		close(rec.block) // the kernel lets the first go, and the rest follow
		v.queue(removeB, false)
		v.wait = time.Hour
		waitUntil(t, func() bool { v.mu.Lock(); defer v.mu.Unlock(); return !v.late })
		v.settle()
		// The ten writes of c waited together: c's entry is told once.
		got := rec.take()
		if n := count(got, "entry 10 c"); n != 1 {
			t.Errorf("notifies %q: c's entry told %d times, want once", got, n)
		}
		if n := count(got, "entry 10 b"); n != 2 {
			t.Errorf("notifies %q: b's entry told %d times, want twice", got, n)
		}
		v.close()
	})
	t.Run("a full queue folds into a loss", func(t *testing.T) {
		m, rec := invalidationTree(t, nil)
		rec.block = make(chan struct{})
		v := newInvalidator(m)
		v.wait = time.Hour
		v.queue(removeB, false) // the goroutine takes it and blocks
		waitUntil(t, func() bool { v.mu.Lock(); defer v.mu.Unlock(); return len(v.q) == 0 })
		for range maxQueued + 5 {
			v.queue(journal.Event{Type: journal.Write, Path: "/a/c", Origin: journal.API}, false)
		}
		v.mu.Lock()
		queued, first := len(v.q), v.q[0]
		v.mu.Unlock()
		if queued > maxQueued || !first.lost {
			t.Fatalf("%d queued, the first lost=%v: want at most %d and a loss first", queued, first.lost, maxQueued)
		}
		close(rec.block)
		v.settle()
		if got := rec.take(); !slices.Contains(got, "entry 1 a") {
			t.Errorf("notifies %q: the loss did not invalidate everything", got)
		}
		v.close()
	})
	t.Run("nothing after close", func(t *testing.T) {
		m, rec := invalidationTree(t, nil)
		v := newInvalidator(m)
		v.close()
		v.queue(removeB, false)
		v.settle() // returns: nobody will send
		if got := rec.take(); len(got) != 0 {
			t.Errorf("notifies %q, want none", got)
		}
	})
}

func count(l []string, s string) (n int) {
	for _, x := range l {
		if x == s {
			n++
		}
	}
	return n
}

// waitUntil waits for cond, failing the test after a minute.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("condition not met within a minute")
		}
	}
}
