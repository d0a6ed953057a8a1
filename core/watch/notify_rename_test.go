package watch

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRenameOutOfSightUnderClaim: the daemon renames an entry into a
// directory it made a moment before and whose watch the reader has not
// placed yet, so the kernel queues the rename's first half only, followed
// by the claim's sentinel. The half waits for its pair (renamePairWait)
// and is then judged a move out of the tree: it is the claim's echo all
// the same, and nothing is told. The reader is held off (its lock) while
// the operation runs, so the queue holds exactly that order every time.
func TestRenameOutOfSightUnderClaim(t *testing.T) {
	for _, tc := range []struct {
		name  string
		isDir bool
	}{
		{"file", false},
		{"directory", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, root, jw := watched(t)
			if tc.isDir {
				must(t, os.MkdirAll(filepath.Join(root, "stage", "d"), 0o755))
				must(t, os.WriteFile(filepath.Join(root, "stage", "d", "f"), []byte("x"), 0o644))
			} else {
				must(t, os.WriteFile(filepath.Join(root, "stage"), []byte("x"), 0o644))
			}
			cursor := w.h.Journal.Seq()
			settle(t, w, jw, cursor)
			cursor = w.h.Journal.Seq()

			c := w.Claim("/stage", "/new")
			n := w.ledger.reader.Load()
			n.mu.Lock()
			must(t, os.Mkdir(filepath.Join(root, "new"), 0o755))
			must(t, os.Rename(filepath.Join(root, "stage"), filepath.Join(root, "new", "stage")))
			c.Done()
			n.mu.Unlock()

			if got := fmtEvents(settle(t, w, jw, cursor)); got != "" {
				t.Errorf("the claim's own rename was told:\n%s", got)
			}
			// The tree is still heard where the entry went.
			must(t, os.WriteFile(filepath.Join(root, "new", "later"), []byte("y"), 0o644))
			if got, want := fmtEvents(settle(t, w, jw, cursor)), "external create /new/later\nexternal write /new/later"; got != want {
				t.Errorf("after it:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}
