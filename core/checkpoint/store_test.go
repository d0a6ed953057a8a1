package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"sandfs/core"
	"sandfs/internal/testenv"
)

// The checkpoint store: incremental checkpoints, the chain and its
// compaction, deleting inside it.

func countObjects(t testing.TB, s *core.Sandbox) int {
	n := 0
	filepath.WalkDir(filepath.Join(s.StateDir(), "objects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
}

func TestCheckpointIncrementalReadsOnlyChanged(t *testing.T) {
	root := t.TempDir()
	for i := 0; i < 200; i++ {
		p := filepath.Join(root, fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%d", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("file %d", i)), 0o644)
	}
	s := histSandbox(t, root)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.StartWatching(wctx, nil); err != nil {
		testenv.Skip(t, nil, "no kernel watch here: %v", err)
	}
	<-s.Watch().Ready()
	first := mustCheckpoint(t, s, Options{})
	if r := FilesRead(s); r != 200 {
		t.Fatalf("first checkpoint read %d files, want 200", r)
	}
	for i := 0; i < 5; i++ {
		write(t, s, fmt.Sprintf("/d%d/f%d", i, i), fmt.Sprintf("changed %d", i))
	}
	write(t, s, "/d3/new", "new")
	if err := s.Remove(ctx, "/d9", true); err != nil {
		t.Fatal(err)
	}
	second := mustCheckpoint(t, s, Options{})
	if h, _ := storeOf(s); h.walks.Load() != 1 {
		t.Errorf("%d whole-tree walks, want 1 (the first checkpoint's)", h.walks.Load())
	}
	if r := FilesRead(s) - 200; r != 6 {
		t.Errorf("the second checkpoint read %d files, want 6", r)
	}
	if second.Files != 200-20+1 || second.NewBytes != int64(5*len("changed 0")+3) {
		t.Errorf("second %+v (first %+v)", second, first)
	}
	// The delta chain gives the same tree as a walk.
	third := mustCheckpoint(t, s, Options{})
	if r := FilesRead(s) - 206; r != 0 || third.NewBytes != 0 || third.Files != second.Files {
		t.Errorf("nothing changed, yet %d reads, %+v", r, third)
	}
	mkTree := func(id string) map[string]cpEntry {
		h, _ := storeOf(s)
		h.last = nil
		tr, err := h.tree(id)
		if err != nil {
			t.Fatal(err)
		}
		return tr.files
	}
	walked := newBuilder(ctx, s, &cpStore{}, nil, false, nil)
	if err := walked.full(); err != nil {
		t.Fatal(err)
	}
	got := mkTree(third.ID)
	for p, e := range walked.set {
		if g := got[p]; g.Hash != e.Hash || g.Kind != e.Kind || g.Perm != e.Perm {
			t.Errorf("%s: chain %+v, walk %+v", p, g, e)
		}
	}
	if len(got) != len(walked.set) {
		t.Errorf("chain has %d entries, walk %d", len(got), len(walked.set))
	}
}

// TestCheckpointChainCompacts: the checkpoint at depth 32 becomes a base,
// and every checkpoint of the chain restores its own tree.
func TestCheckpointChainCompacts(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"f": "v0", "g": "g"})
	s := histSandbox(t, root)
	var ids []string
	for i := 0; i <= compactEvery+2; i++ {
		write(t, s, "/f", fmt.Sprint("v", i))
		write(t, s, fmt.Sprintf("/n%d", i), "n")
		ids = append(ids, mustCheckpoint(t, s, Options{}).ID)
		if i == compactEvery {
			// The base is written after the checkpoint answers: until it
			// is, the next ones count their depth from the long chain and
			// are compacted too (CI saw it on a loaded machine).
			h, _ := storeOf(s)
			h.compacting.Wait()
		}
	}
	h, _ := storeOf(s)
	h.compacting.Wait()
	h.mu.Lock()
	if hd := h.hdrs[ids[compactEvery]]; hd.Parent != "" || hd.Depth != 0 {
		t.Errorf("checkpoint %d: parent %q depth %d, want a base", compactEvery, hd.Parent, hd.Depth)
	}
	if hd := h.hdrs[ids[compactEvery+2]]; hd.Parent != ids[compactEvery+1] {
		t.Errorf("the chain goes on from the base: parent %q", hd.Parent)
	}
	h.mu.Unlock()
	for _, i := range []int{3, compactEvery - 1, compactEvery, compactEvery + 2} {
		if _, err := Restore(ctx, s, RestoreOptions{Checkpoint: ids[i]}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "f")); string(b) != fmt.Sprint("v", i) {
			t.Errorf("restore of %d: f = %q", i, b)
		}
		if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("n%d", i+1))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("restore of %d: n%d is there", i, i+1)
		}
		if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("n%d", i))); err != nil {
			t.Errorf("restore of %d: n%d: %v", i, i, err)
		}
	}
}

// TestCheckpointDeleteInChain: deleting a delta folds it into its child,
// deleting a base makes its child one; the others restore whole, and the
// store keeps exactly the contents still named.
func TestCheckpointDeleteInChain(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"f": "A", "only-a": "a"})
	s := histSandbox(t, root)
	a := mustCheckpoint(t, s, Options{})
	write(t, s, "/f", "B")
	s.Remove(ctx, "/only-a", false)
	b := mustCheckpoint(t, s, Options{})
	write(t, s, "/g", "C")
	c := mustCheckpoint(t, s, Options{})
	want := treeDigest(t, root)
	h, _ := storeOf(s)
	if err := Delete(s, b.ID); err != nil {
		t.Fatal(err)
	}
	if hd := h.hdrs[c.ID]; hd.Parent != a.ID {
		t.Errorf("c's parent %q, want a %q", hd.Parent, a.ID)
	}
	if n := countObjects(t, s); n != 4 { // A, a, C, and B which c still has
		t.Errorf("%d objects, want 4", n)
	}
	if err := Delete(s, a.ID); err != nil {
		t.Fatal(err)
	}
	if hd := h.hdrs[c.ID]; hd.Parent != "" {
		t.Errorf("c's parent %q, want none (a base)", hd.Parent)
	}
	if n := countObjects(t, s); n != 2 { // B, C
		t.Errorf("%d objects, want 2", n)
	}
	write(t, s, "/f", "changed")
	write(t, s, "/only-a", "back")
	h.last, h.other = nil, nil // read c back from its manifest
	if _, err := Restore(ctx, s, RestoreOptions{Checkpoint: c.ID}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "restore of c", want, treeDigest(t, root))
}

// On a root no kernel watch covers, a checkpoint walks the whole tree;
// one made FromJournal looks again only at what the journal names since
// the newest checkpoint (the sandbox's own writes): no walk, only the
// written file read, and an outside write it was not told of is not in
// it (the next walk finds it).
func TestCheckpointFromJournal(t *testing.T) {
	root := t.TempDir()
	for i := range 20 {
		mk(t, root, map[string]string{fmt.Sprintf("d%d/f%d", i%4, i): fmt.Sprintf("file %d", i)})
	}
	s := histSandbox(t, root) // no watch started
	mustCheckpoint(t, s, Options{})
	h, _ := storeOf(s)
	walks, reads := h.walks.Load(), FilesRead(s)
	write(t, s, "/d1/f1", "through the sandbox")
	write(t, s, "/d2/new", "made through the sandbox")
	if err := s.Remove(ctx, "/d3/f3", false); err != nil {
		t.Fatal(err)
	}
	must(t, os.WriteFile(filepath.Join(root, "d0", "f0"), []byte("outside"), 0o644))
	cp := mustCheckpoint(t, s, Options{FromJournal: true})
	if w, r := h.walks.Load()-walks, FilesRead(s)-reads; w != 0 || r != 2 {
		t.Fatalf("FromJournal: %d walks, %d files read; want 0 and 2", w, r)
	}
	got := map[string]string{}
	ents, err := Entries(s, cp.ID)
	must(t, err)
	for _, e := range ents {
		got[e.Path] = e.Hash
	}
	sum := func(b string) string { return hashOf(t, []byte(b)) }
	if got["/d1/f1"] != sum("through the sandbox") || got["/d2/new"] != sum("made through the sandbox") {
		t.Fatalf("the written files: %s %s", got["/d1/f1"], got["/d2/new"])
	}
	if _, ok := got["/d3/f3"]; ok || got["/d0/f0"] != sum("file 0") || len(ents) != 1+4+20 {
		t.Fatalf("FromJournal: /d3/f3 kept %v, /d0/f0 %s (want the checkpoint's before), %d entries", ok, got["/d0/f0"], len(ents))
	}
	next := mustCheckpoint(t, s, Options{})
	if h.walks.Load()-walks != 1 {
		t.Fatal("a checkpoint of an unwatched root did not walk it")
	}
	nents, err := Entries(s, next.ID)
	must(t, err)
	for _, e := range nents {
		if e.Path == "/d0/f0" && e.Hash != sum("outside") {
			t.Fatalf("the walk after: /d0/f0 %s, want the outside write's", e.Hash)
		}
	}
}
