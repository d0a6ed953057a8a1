package journal

import (
	"errors"
	"testing"
)

// Each Watch is its own reference: releasing one twice is refused, so a
// client cannot end a shared watcher for the others.
func TestWatcherReferences(t *testing.T) {
	j := New()
	cfg := Config{Path: "/", Recursive: true}
	w, a, _, _ := j.Watch(cfg)
	_, b, reused, _ := j.Watch(cfg)
	if !reused || a.Ref != w.ID+".1" || b.Ref != w.ID+".2" || b.Refs != 2 {
		t.Fatalf("two creates: %q %q reused %v refs %d", a.Ref, b.Ref, reused, b.Refs)
	}
	steps := []struct {
		op, id  string
		left    int
		err     error
		findsID bool // the watcher is still found by its own id after
	}{
		{"find", a.Ref, 0, nil, true},
		{"release", w.ID, 0, ErrUnknownWatcher, true}, // the shared id is no reference
		{"release", a.Ref, 1, nil, true},
		{"release", a.Ref, 0, ErrUnknownWatcher, true}, // twice: refused, b still holds it
		{"find", a.Ref, 0, ErrUnknownWatcher, true},    // a released reference reads nothing
		{"find", b.Ref, 0, nil, true},
		{"release", w.ID + ".9", 0, ErrUnknownWatcher, true},
		{"release", b.Ref, 0, nil, false},
		{"release", b.Ref, 0, ErrUnknownWatcher, false},
	}
	for i, s := range steps {
		var n int
		var err error
		if s.op == "find" {
			_, err = j.Watcher(s.id)
		} else {
			n, err = j.Release(s.id)
		}
		if n != s.left || !errors.Is(err, s.err) {
			t.Errorf("step %d: %s %s: %d, %v; want %d, %v", i, s.op, s.id, n, err, s.left, s.err)
		}
		if _, err := j.Watcher(w.ID); (err == nil) != s.findsID {
			t.Errorf("step %d: watcher by id: %v", i, err)
		}
	}
	if _, c, reused, _ := j.Watch(cfg); reused || c.Ref == b.Ref {
		t.Errorf("a create after the last release: %q reused %v", c.Ref, reused)
	}
}

// A watcher holds at most MaxRefs references: the next create drops the
// oldest, and no other.
func TestWatcherReferenceLimit(t *testing.T) {
	j := New()
	cfg := Config{Path: "/"}
	var first, second Info
	for i := range MaxRefs + 1 {
		_, in, _, err := j.Watch(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = in
		} else if i == 1 {
			second = in
		}
		if in.Refs != min(i+1, MaxRefs) {
			t.Fatalf("create %d: %d references", i, in.Refs)
		}
	}
	if _, err := j.Release(first.Ref); !errors.Is(err, ErrUnknownWatcher) {
		t.Errorf("the oldest reference past the limit: %v, want dropped", err)
	}
	if n, err := j.Release(second.Ref); n != MaxRefs-1 || err != nil {
		t.Errorf("the second reference: %d, %v", n, err)
	}
}
