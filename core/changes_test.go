package core

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestChangesLostWhileDegraded: a directory the kernel watch could not
// take (the inotify limit) makes every change set at, above or under it
// lost: one from before the hole (the loss mark is in the range, which
// the journal tells of every path) and one from after it (the hole is
// still there); a path elsewhere, from after it, is not. It lives in core,
// not in package changes, because it makes the hole through the
// sandbox's watch (watch.Watch.Refuse).
func TestChangesLostWhileDegraded(t *testing.T) {
	s, root, _, _ := watchedNamed(t, "default")
	mk(t, root, map[string]string{"d/x": "", "other/y": ""})
	if err := s.Mkdir(ctx, "/e", false, 0o755); err != nil { // an event to start after
		t.Fatal(err)
	}
	before := s.Journal().Seq()
	s.watch.Refuse("/d", unix.ENOSPC) // as the walk does when the limit is hit
	after := s.Journal().Seq()
	if after == before {
		t.Fatal("the hole was not marked in the journal")
	}
	for _, c := range []struct {
		name  string
		since uint64
		path  string
		lost  bool
	}{
		{"since before the hole", before, "", true},
		{"since after the hole", after, "", true},
		{"under the hole", after, "/d/x", true},
		{"above the hole", before, "/", true},
		{"elsewhere, since after", after, "/other", false},
		{"elsewhere, since before", before, "/other", true},
	} {
		lost, err := changesLost(ctx, s, c.since, c.path)
		if err != nil {
			t.Fatal(err)
		}
		if lost != c.lost {
			t.Errorf("%s: lost %v, want %v", c.name, lost, c.lost)
		}
	}
}
