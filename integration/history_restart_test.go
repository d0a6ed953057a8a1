package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"sandfs/core/journal"
)

// TestHistoryCursorAfterManyFound: a watcher's cursor from before a kill -9
// resumes after the restart with nothing lost, even when more changes were
// made while the daemon was down than a watcher buffers (each is found at
// start, and the kept journal holds them all).
func TestHistoryCursorAfterManyFound(t *testing.T) {
	state, root := t.TempDir(), t.TempDir()
	args := []string{"--root", root, "--state", state, "--no-auth"}
	d := startDaemon(t, args...)
	w := newWatch(t, d)
	must(t, os.WriteFile(filepath.Join(root, "before"), nil, 0o644))
	evs, cursor, overflow := pollOnce(t, d.URL, w.id, w.cursor, 10)
	if overflow || len(evs) == 0 {
		t.Fatalf("before the kill: %d events, overflow %v", len(evs), overflow)
	}
	d.Signal(t, syscall.SIGKILL)
	if _, exited := d.Wait(10 * time.Second); !exited {
		t.Fatal("the daemon did not die")
	}
	made := journal.BufferSize + 2000
	for i := range made {
		must(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("down%d", i)), nil, 0o644))
	}
	d2 := startDaemon(t, args...)
	found := map[string]bool{}
	for quiet := 0; quiet < 2; {
		evs, next, overflow := pollOnce(t, d2.URL, w.id, cursor, 2)
		if overflow {
			t.Fatalf("overflow after the restart at cursor %d (%d of %d found so far)", cursor, len(found), made)
		}
		if len(evs) == 0 {
			quiet++
		}
		for _, e := range evs {
			if e.FoundAtStart {
				found[e.Path] = true
			}
		}
		cursor = next
	}
	if len(found) != made {
		t.Errorf("%d changes found at start over the watch, want %d", len(found), made)
	}
}
