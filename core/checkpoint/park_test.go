package checkpoint

import (
	"os"
	"path/filepath"
	"testing"

	"sandfs/core"
)

// A store closed after Park hands its newest tree to the next open of
// the same state directory: the tree is the checkpoint's, kept as the
// newest, and the next checkpoint built on it is right; another state
// directory does not take it, a plain Close parks nothing, and a
// checkpoint deleted meanwhile is not taken.
func TestParkedTree(t *testing.T) {
	root, state, other := t.TempDir(), t.TempDir(), t.TempDir()
	mk(t, root, map[string]string{"a": "alpha", "d/b": "beta"})
	open := func(state string) *core.Sandbox {
		s, err := core.Open("default", root, core.Options{StateDir: state})
		must(t, err)
		return s
	}
	s := open(state)
	cp := mustCheckpoint(t, s, Options{})
	want, err := Entries(s, cp.ID)
	must(t, err)
	Park(s)
	must(t, s.Close())

	o := open(other) // another state directory: not its tree
	ho, err := storeOf(o)
	must(t, err)
	if ho.last != nil || ho.other != nil {
		t.Fatalf("a store of another state directory took the parked tree %v", ho.last.hdr.ID)
	}
	must(t, o.Close())

	s = open(state)
	h, err := storeOf(s)
	must(t, err)
	if h.last == nil || h.last.hdr.ID != cp.ID || len(h.last.files) != len(want) {
		t.Fatalf("the store opened again did not take its parked tree (%v)", h.last)
	}
	got, err := Entries(s, cp.ID)
	must(t, err)
	if !sameEntries(got, want) {
		t.Fatalf("the parked tree's entries:\n%v\nwant\n%v", got, want)
	}
	write(t, s, "/a", "changed")
	next := mustCheckpoint(t, s, Options{})
	ents, err := Entries(s, next.ID)
	must(t, err)
	for _, e := range ents {
		if e.Path == "/a" && e.Hash != hashOf(t, []byte("changed")) {
			t.Fatalf("the checkpoint on the parked tree: /a %s", e.Hash)
		}
	}
	must(t, s.Close()) // no Park: nothing parked
	s = open(state)
	if h, err = storeOf(s); err != nil || h.last != nil {
		t.Fatalf("a plain Close parked its tree (%v)", err)
	}
	Park(s)
	parkedCp := mustCheckpoint(t, s, Options{}) // next's tree, unchanged
	must(t, s.Close())

	must(t, os.Remove(filepath.Join(state, "checkpoints", parkedCp.ID)))
	s = open(state)
	defer s.Close()
	h, err = storeOf(s)
	must(t, err)
	if h.last != nil && h.last.hdr.ID == parkedCp.ID || h.other != nil && h.other.hdr.ID == parkedCp.ID {
		t.Fatal("a store took the parked tree of a checkpoint deleted meanwhile")
	}
	again, err := Entries(s, cp.ID)
	must(t, err)
	if !sameEntries(again, want) {
		t.Fatalf("checkpoint %s after the parked tree was dropped: %v", cp.ID, again)
	}
}

func sameEntries(a, b []Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Path != b[i].Path || a[i].Hash != b[i].Hash || a[i].Mode != b[i].Mode || !a[i].Mtime.Equal(b[i].Mtime) || a[i].Size != b[i].Size {
			return false
		}
	}
	return true
}
