package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestClaimUnderOutsideFlood: an outside writer that keeps the kernel queue
// full (two files exchanged with renameat2 as fast as it can, each exchange
// four events) must not hold the daemon's operations:
// a claim reads what was queued when it opened (FIONREAD), not until the
// queue is empty, which it never is. Before that bound the first write
// below never returned. Every write must return, and read back whole.
func TestClaimUnderOutsideFlood(t *testing.T) {
	s, root, _ := watched(t)
	must(t, os.MkdirAll(filepath.Join(root, "flood"), 0o755))
	for _, f := range []string{"x", "y"} {
		must(t, os.WriteFile(filepath.Join(root, "flood", f), []byte(f), 0o644))
	}
	ctx, stop := context.WithCancel(context.Background())
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		dir := filepath.Join(root, "flood")
		for ctx.Err() == nil {
			if unix.Renameat2(unix.AT_FDCWD, filepath.Join(dir, "x"), unix.AT_FDCWD, filepath.Join(dir, "y"), unix.RENAME_EXCHANGE) == nil {
				swaps.Add(1)
			}
		}
	}()
	defer func() { stop(); wg.Wait() }()
	for swaps.Load() < 1000 {
		time.Sleep(time.Millisecond)
	}

	const writes = 20
	start := time.Now()
	var took time.Duration
	done := make(chan error, 1)
	go func() {
		for i := 0; i < writes; i++ {
			body := fmt.Sprintf("write %d", i)
			if _, err := s.WriteFile(context.Background(), fmt.Sprintf("/w/f%02d", i), strings.NewReader(body), WriteOptions{MkdirParents: true}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	select {
	case err := <-done:
		took = time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("%d writes did not return in 60 s while an outside writer flooded the queue (%d exchanges)", writes, swaps.Load())
	}
	stop()
	wg.Wait()
	for i := 0; i < writes; i++ {
		b, err := os.ReadFile(filepath.Join(root, "w", fmt.Sprintf("f%02d", i)))
		if want := fmt.Sprintf("write %d", i); err != nil || string(b) != want {
			t.Fatalf("f%02d: got %q, %v; want %q", i, b, err, want)
		}
	}
	t.Logf("%d writes in %v during %d outside exchanges", writes, took, swaps.Load())
}
