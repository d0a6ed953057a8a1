package journal

import (
	"sync"
	"testing"
)

// TestOnAppendRunsBeforeReaders: a hook has finished with an event before
// any watcher or subscription can read it, sees loss markers, and stops when
// removed.
func TestOnAppendRunsBeforeReaders(t *testing.T) {
	j := New()
	sub := j.Subscribe(nil, 16)
	defer sub.Close()
	var mu sync.Mutex
	var seen []string
	var losses []string
	remove := j.OnAppend(Hook{Queue: func(e Event, lost bool) {
		if lost {
			losses = append(losses, e.Path)
			return
		}
		if len(sub.C) != 0 {
			t.Errorf("hook for %s ran after the event was handed out", e.Path)
		}
		if e.Seq != 0 {
			t.Errorf("hook saw seq %d: the event was stored already", e.Seq)
		}
		mu.Lock()
		seen = append(seen, e.Path)
		mu.Unlock()
	}})
	for _, p := range []string{"/a", "/b"} {
		j.Append(Event{Type: Create, Path: p, Origin: API})
		<-sub.C
	}
	j.Lost("/sub")
	remove()
	j.Append(Event{Type: Create, Path: "/c", Origin: API})
	if got := len(seen); got != 2 || seen[0] != "/a" || seen[1] != "/b" {
		t.Errorf("hook saw %v, want [/a /b]", seen)
	}
	if len(losses) != 1 || losses[0] != "/sub" {
		t.Errorf("hook saw losses %v, want [/sub]", losses)
	}
}
