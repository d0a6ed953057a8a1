package watch

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sandfs/core/journal"
)

// TestReaderLoopShared: the sandboxes of a process share one reader loop.
// Each is told its own outside changes and nobody else's, one stopped
// leaves the others told, and the loop ends with the last one.
func TestReaderLoopShared(t *testing.T) {
	const n = 12
	type sb struct {
		s      *Watch
		root   string
		w      *journal.Watcher
		cancel context.CancelFunc
	}
	var all []sb
	for i := 0; i < n; i++ {
		s, root, w, cancel := watchedNamed(t, fmt.Sprintf("s%02d", i))
		all = append(all, sb{s, root, w, cancel})
	}
	readers.mu.Lock()
	members := len(readers.members) / 2 // each by its two descriptors
	readers.mu.Unlock()
	if members < n {
		t.Fatalf("the reader loop holds %d notifiers, want at least %d", members, n)
	}
	round := func(t *testing.T, live []sb, name string) {
		t.Helper()
		for i, x := range live {
			cursor := x.s.h.Journal.Seq()
			must(t, os.WriteFile(filepath.Join(x.root, name), []byte(fmt.Sprint(i)), 0o644))
			got := fmtEvents(settle(t, x.s, x.w, cursor))
			want := "external create /" + name + "\nexternal write /" + name
			if got != want {
				t.Errorf("%s: events:\n%s\nwant:\n%s", x.s.h.Name, got, want)
			}
		}
	}
	round(t, all, "first")
	for _, x := range all[:n/2] {
		x.cancel()
	}
	round(t, all[n/2:], "second")
	for _, x := range all[n/2:] {
		x.cancel()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		readers.mu.Lock()
		running, left := readers.running, len(readers.members)/2
		readers.mu.Unlock()
		if !running && left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reader loop still runs with %d notifiers after every sandbox stopped", left)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
