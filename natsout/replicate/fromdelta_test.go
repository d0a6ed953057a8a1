package replicate

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"sandfs/core"
	"sandfs/core/checkpoint"
)

// offered is the objects of out's files, sorted.
func offered(out outgoing) []string {
	var hs []string
	for _, e := range out.files {
		hs = append(hs, e.Hash)
	}
	slices.Sort(hs)
	return hs
}

// A manifest made from the store's delta of a checkpoint (fromDelta) is
// the one comparing the trees makes (fromTree), whatever that delta
// holds: entries whose stat identity alone changed, a path deleted that
// the base lacks (a checkpoint between was deleted and folded in), a path
// deleted and made again. Once sent, the tree it keeps for the next delta
// is the checkpoint's.
func TestFromDeltaIsFromTree(t *testing.T) {
	cases := []struct {
		name   string
		change func(t *testing.T, root string)
		// fold: the checkpoint made after change is followed by one after
		// fold, and then deleted, so the last one's delta is both folded.
		fold func(t *testing.T, root string)
	}{
		{name: "a file changed, one added, one removed", change: func(t *testing.T, root string) {
			write(t, root, "f003", content(3, 1))
			write(t, root, "new", content(200, 0))
			rm(t, root, "f010")
		}},
		{name: "modes touched, contents and modes as they were", change: func(t *testing.T, root string) {
			for _, n := range []string{"f001", "f002"} {
				if err := os.Chmod(filepath.Join(root, n), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write(t, root, "f004", content(4, 2))
		}},
		{name: "a file made a directory", change: func(t *testing.T, root string) {
			rm(t, root, "f005")
			if err := os.Mkdir(filepath.Join(root, "f005"), 0o755); err != nil {
				t.Fatal(err)
			}
			write(t, root, "f005/inner", content(300, 0))
		}},
		{name: "added, then removed, the checkpoint between deleted",
			change: func(t *testing.T, root string) {
				write(t, root, "brief", content(400, 0))
				write(t, root, "f006", content(6, 1))
			},
			fold: func(t *testing.T, root string) {
				rm(t, root, "brief")
				rm(t, root, "f007")
			}},
		{name: "nothing changed", change: func(t *testing.T, root string) {}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			sb, root := box(t, "alpha")
			cp1 := mkCheckpoint(t, sb)
			c.change(t, root)
			cp := mkCheckpoint(t, sb)
			if c.fold != nil {
				between := cp
				c.fold(t, root)
				cp = mkCheckpoint(t, sb)
				if err := checkpoint.Delete(sb, between.ID); err != nil {
					t.Fatal(err)
				}
			}
			e1, err := checkpoint.Entries(sb, cp1.ID)
			if err != nil {
				t.Fatal(err)
			}
			s := &sandbox{r: &Replicator{}, name: "alpha", sb: sb, last: entriesOf(e1), lastID: cp1.ID, chain: 2, prev: map[string]bool{}}
			for _, e := range e1 {
				s.prev[e.Hash] = e.Type == "file"
			}
			d := storeDeltaOf(t, sb, cp)
			// With no tree kept (a seed that read none), an exact delta
			// goes as the store has it, and applies to the base; a
			// folded one does not go.
			lazy := &sandbox{r: &Replicator{}, name: "alpha", sb: sb, lastID: cp1.ID, chain: 2, prev: map[string]bool{}}
			if ld, ok := lazy.fromDelta(cp, d); ok != d.exact || d.exact != (c.fold == nil) {
				t.Fatalf("no tree kept: a delta made %v, exact %v; want made when exact, exact unless folded", ok, d.exact)
			} else if ok {
				e, _ := checkpoint.Entries(sb, cp.ID)
				got, err := apply(func() []Entry {
					var es []Entry
					for _, x := range e1 {
						es = append(es, EntryOf(x))
					}
					return es
				}(), ld.m.Entries, ld.m.Removed)
				if err != nil || len(got) != len(e) {
					t.Fatalf("no tree kept: the delta applied to the base: %d entries, %v; want the %d of the tree", len(got), err, len(e))
				}
				for i := range got {
					if !sameEntry(got[i], EntryOf(e[i])) {
						t.Fatalf("no tree kept: the delta applied gives %+v, want %+v", got[i], EntryOf(e[i]))
					}
				}
				ld.done(true)
				if lazy.last != nil || lazy.lastID != cp.ID || lazy.chain != 3 {
					t.Fatalf("no tree kept: after it, a tree of %d, %s at chain %d; want none, %s at 3", len(lazy.last), lazy.lastID, lazy.chain, cp.ID)
				}
			}
			fd, ok := s.fromDelta(cp, d)
			if !ok {
				t.Fatal("fromDelta declined; want a delta")
			}
			ft, err := s.fromTree(ctx, nil, cp)
			if err != nil {
				t.Fatal(err)
			}
			if ft.m.Base != cp1.ID {
				t.Fatalf("fromTree made a manifest of base %q, want a delta of %s", ft.m.Base, cp1.ID)
			}
			if fd.m.Base != ft.m.Base || fd.m.Chain != 3 || ft.m.Chain != 3 {
				t.Fatalf("base %q chain %d, want %q chain 3 (fromTree's chain %d)", fd.m.Base, fd.m.Chain, ft.m.Base, ft.m.Chain)
			}
			if !slices.EqualFunc(fd.m.Entries, ft.m.Entries, sameEntry) {
				t.Fatalf("entries %v, want %v", paths(fd.m.Entries), paths(ft.m.Entries))
			}
			if !slices.Equal(fd.m.Removed, ft.m.Removed) {
				t.Fatalf("removed %v, want %v", fd.m.Removed, ft.m.Removed)
			}
			if !slices.Equal(offered(fd), offered(ft)) {
				t.Fatalf("objects offered %v, want %v", offered(fd), offered(ft))
			}
			fd.done(true)
			e, err := checkpoint.Entries(sb, cp.ID)
			if err != nil {
				t.Fatal(err)
			}
			want := entriesOf(e)
			if len(s.last) != len(want) || s.lastID != cp.ID || s.chain != 3 {
				t.Fatalf("kept %d paths of %s at chain %d, want %d of %s at 3", len(s.last), s.lastID, s.chain, len(want), cp.ID)
			}
			for p, w := range want {
				if !sameEntry(s.last[p], w) {
					t.Fatalf("kept %+v for %s, want %+v", s.last[p], p, w)
				}
				if w.Type == "file" && !s.prev[w.Hash] {
					t.Fatalf("object %s of %s not known sent", w.Hash, p)
				}
			}
		})
	}
}

// No delta from the store when its parent is not the manifest sent last,
// the chain is at its bound, or the delta names the whole tree: the tree
// is compared instead.
func TestFromDeltaDeclines(t *testing.T) {
	sb, root := box(t, "alpha")
	cp1 := mkCheckpoint(t, sb)
	write(t, root, "f001", content(1, 1))
	cp2 := mkCheckpoint(t, sb)
	e1, err := checkpoint.Entries(sb, cp1.ID)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name   string
		lastID string
		chain  int
		cp     checkpoint.Checkpoint
	}{
		{"its parent is not the base", cp2.ID, 0, cp2},
		{"the chain at its bound", cp1.ID, deltaChain, cp2},
		{"a base in the store", "", 0, cp1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &sandbox{r: &Replicator{}, name: "alpha", sb: sb, last: entriesOf(e1), lastID: c.lastID, chain: c.chain, prev: map[string]bool{}}
			if _, ok := s.fromDelta(c.cp, storeDeltaOf(t, sb, c.cp)); ok {
				t.Fatal("fromDelta made a delta; want it declined")
			}
		})
	}
	t.Run("a delta naming the whole tree", func(t *testing.T) {
		for i := 0; i < 99; i++ {
			write(t, root, fmt.Sprintf("f%03d", i), content(i, 5))
		}
		rm(t, root, "f099")
		cp3 := mkCheckpoint(t, sb)
		e2, _ := checkpoint.Entries(sb, cp2.ID)
		s := &sandbox{r: &Replicator{}, name: "alpha", sb: sb, last: entriesOf(e2), lastID: cp2.ID, prev: map[string]bool{}}
		if _, ok := s.fromDelta(cp3, storeDeltaOf(t, sb, cp3)); ok {
			t.Fatal("fromDelta made a delta; want it declined")
		}
	})
}

// storeDeltaOf is the store's delta of cp, as send reads it.
func storeDeltaOf(t *testing.T, sb *core.Sandbox, cp checkpoint.Checkpoint) storeDelta {
	t.Helper()
	var d storeDelta
	var err error
	d.parent, d.set, d.del, d.exact, err = checkpoint.Delta(sb, cp.ID)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func rm(t *testing.T, root, name string) {
	t.Helper()
	if err := os.Remove(filepath.Join(root, name)); err != nil {
		t.Fatal(err)
	}
}
