package replicate

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"sandfs/core/checkpoint"
	"sandfs/natsout/natstest"
)

// A fetch into a store that holds a checkpoint of the manifest's chain of
// deltas (a host taking back a sandbox it sent) reads the deltas above
// it, fetches only their objects, and records the checkpoint as a delta
// of it: the tree the sender's, entry for entry.
func TestFetchDeltaOnHeldBase(t *testing.T) {
	b := natstest.Start(t)
	r := start(t, b)
	sb, root := added(t, r, "alpha")
	cp1 := mkCheckpoint(t, sb)
	write(t, root, "f003", content(3, 1))
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, root, "sub/new", content(200, 0))
	mkCheckpoint(t, sb)
	write(t, root, "f004", content(4, 1))
	rm(t, root, "f010")
	if err := os.RemoveAll(filepath.Join(root, "sub")); err != nil {
		t.Fatal(err)
	}
	cp3 := mkCheckpoint(t, sb)
	waitSent(t, r, "alpha", 3)

	dst := target(t, "alpha")
	if _, err := r.Fleet().Fetch(ctx, "alpha", cp1.ID, dst); err != nil {
		t.Fatal(err)
	}
	got, err := r.Fleet().Fetch(ctx, "alpha", cp3.ID, dst)
	if err != nil {
		t.Fatal(err)
	}
	// f003's and f004's new contents; sub/new came and went in between.
	if got.Objects != 2 || got.Checkpoint.ID != cp3.ID || got.Checkpoint.Files != cp3.Files {
		t.Fatalf("fetched %+v, want 2 objects and the header of %+v", got, cp3)
	}
	parent, set, del, exact, err := checkpoint.Delta(dst, cp3.ID)
	if err != nil || parent != cp1.ID || !exact {
		t.Fatalf("recorded as a delta of %q, exact %v (%v), want an exact delta of %s", parent, exact, err, cp1.ID)
	}
	if len(del) != 1 || del[0] != "/f010" || len(set) > 3 {
		t.Fatalf("recorded %d set, removed %v; want f003, f004 (and the root), and /f010 removed", len(set), del)
	}
	want, err := checkpoint.Entries(sb, cp3.ID)
	if err != nil {
		t.Fatal(err)
	}
	wj, _ := json.Marshal(want)
	z, err := checkpoint.Entries(dst, cp3.ID)
	if err != nil {
		t.Fatal(err)
	}
	if zj, _ := json.Marshal(z); string(zj) != string(wj) {
		t.Fatalf("the imported tree\n%s\nwant the sender's\n%s", zj, wj)
	}
}
