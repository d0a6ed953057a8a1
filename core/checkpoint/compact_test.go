package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// A compaction encodes the base with the store let go, and renames it in
// only over the header it read: a delete that folded the chain meanwhile
// wins, and every checkpoint still restores its own tree. A checkpoint
// made while it encodes starts no second one, and the one after counts
// its depth from the new base.
func TestCompactLetsGoOfTheStore(t *testing.T) {
	for _, tc := range []struct {
		name     string
		meddle   bool // delete the compacted checkpoint's parent while it encodes
		wantBase bool
	}{
		{"alone", false, true},
		{"parent deleted meanwhile", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			mk(t, root, map[string]string{"f": "v0"})
			s := histSandbox(t, root)
			h, _ := storeOf(s)
			var ids []string
			var called, free atomic.Bool
			var during string // the checkpoint made while it encodes
			compactEncoded = func(id string) {
				if called.Swap(true) {
					return // a later compaction (a restore's undo below)
				}
				if !tc.meddle {
					cp, err := Create(ctx, s, Options{})
					if err != nil {
						t.Error(err)
					}
					during = cp.ID
				}
				if !h.mu.TryLock() {
					return
				}
				free.Store(true)
				hd, err := h.header(id)
				h.mu.Unlock()
				if err == nil && tc.meddle {
					if err := Delete(s, hd.Parent); err != nil {
						t.Error(err)
					}
				}
			}
			defer func() { h.compacting.Wait(); compactEncoded = nil }()
			for i := 0; i <= compactEvery; i++ {
				write(t, s, "/f", fmt.Sprint("v", i))
				write(t, s, fmt.Sprintf("/n%d", i), "n")
				ids = append(ids, mustCheckpoint(t, s, Options{}).ID)
			}
			h.compacting.Wait()
			if !called.Load() || !free.Load() {
				t.Fatalf("compaction: encoded %v, the store free while it encoded %v", called.Load(), free.Load())
			}
			last := ids[compactEvery]
			h.mu.Lock()
			hd, err := h.header(last)
			h.mu.Unlock()
			if err != nil {
				t.Fatal(err)
			}
			if isBase := hd.Parent == ""; isBase != tc.wantBase {
				t.Fatalf("checkpoint %d after the compaction: parent %q depth %d, want a base: %v", compactEvery, hd.Parent, hd.Depth, tc.wantBase)
			}
			if !tc.meddle {
				next := mustCheckpoint(t, s, Options{})
				h.mu.Lock()
				dhd, _ := h.header(during)
				nhd, _ := h.header(next.ID)
				busy := h.compactBusy
				h.mu.Unlock()
				if dhd.Parent != last || nhd.Parent != during || nhd.Depth != 2 || busy {
					t.Fatalf("after the compaction: made meanwhile %+v, next %+v (want depth 2), a compaction running %v", dhd, nhd, busy)
				}
			}
			for _, i := range []int{compactEvery - 3, compactEvery} {
				if _, err := Restore(ctx, s, RestoreOptions{Checkpoint: ids[i]}); err != nil {
					t.Fatal(err)
				}
				if b, _ := os.ReadFile(filepath.Join(root, "f")); string(b) != fmt.Sprint("v", i) {
					t.Errorf("restore of %d: f = %q", i, b)
				}
				for j := 0; j <= compactEvery; j++ {
					_, err := os.Stat(filepath.Join(root, fmt.Sprintf("n%d", j)))
					if there := err == nil; there != (j <= i) {
						t.Errorf("restore of %d: n%d there: %v", i, j, there)
					}
				}
			}
		})
	}
}
