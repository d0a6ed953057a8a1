package checkpoint

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"sandfs/core"
)

// A restore told the root is unchanged since a checkpoint takes that
// checkpoint's tree as the root's, without looking: a file written behind
// the sandbox's back is then in no undo and removed by nothing. Naming a
// checkpoint that is not the newest, or a seq the journal has passed, the
// root is walked as always.
func TestRestoreUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name      string
		unchanged func(s *core.Sandbox, cp0, cp1 Checkpoint) *Still
		walked    bool // the undo holds the file written behind its back
	}{
		{"the newest", func(s *core.Sandbox, _, cp1 Checkpoint) *Still {
			return &Still{Checkpoint: cp1.ID, Seq: s.Journal().Seq()}
		}, false},
		{"the journal past its seq", func(s *core.Sandbox, _, cp1 Checkpoint) *Still {
			return &Still{Checkpoint: cp1.ID, Seq: s.Journal().Seq() - 1}
		}, true},
		{"an older one", func(s *core.Sandbox, cp0, _ Checkpoint) *Still {
			return &Still{Checkpoint: cp0.ID, Seq: s.Journal().Seq()}
		}, true},
		{"none", func(*core.Sandbox, Checkpoint, Checkpoint) *Still { return nil }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root, want := restoreTree(t)
			s := histSandbox(t, root)
			cp0 := mustCheckpoint(t, s, Options{})
			changeThings(t, s, root)
			cp1 := mustCheckpoint(t, s, Options{})
			if err := os.WriteFile(filepath.Join(root, "behind.txt"), []byte("unseen"), 0o644); err != nil {
				t.Fatal(err)
			}
			if !tc.walked {
				want["behind.txt"] = treeDigest(t, root)["behind.txt"]
			}

			res, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp0.ID, Unchanged: tc.unchanged(s, cp0, cp1)})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Skipped) != 0 {
				t.Errorf("skipped %v", res.Skipped)
			}
			// Walked, the file is a change the restore takes back; else it is
			// in neither tree, and left.
			sameTree(t, "after the restore", want, treeDigest(t, root))
			undo, err := ByID(s, res.Undo)
			if err != nil {
				t.Fatal(err)
			}
			_, lerr := Lookup(s, res.Undo, "/behind.txt")
			switch {
			case tc.walked && (lerr != nil || undo.Files != cp1.Files+1):
				t.Errorf("walked: the undo has %d files (cp1 %d), /behind.txt: %v", undo.Files, cp1.Files, lerr)
			case !tc.walked && (!errors.Is(lerr, fs.ErrNotExist) || undo.Files != cp1.Files || undo.Bytes != cp1.Bytes):
				t.Errorf("unchanged: the undo has %d files, %d bytes (cp1 %d, %d), /behind.txt: %v",
					undo.Files, undo.Bytes, cp1.Files, cp1.Bytes, lerr)
			}
			if _, err := Restore(ctx, s, RestoreOptions{Checkpoint: res.Undo}); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"a.txt", "new/one.txt"} {
				if _, err := os.Lstat(filepath.Join(root, p)); err != nil {
					t.Errorf("after the undo: %s: %v", p, err)
				}
			}
		})
	}
}

// Unchanged holds only while the kernel watch covers the root and the
// journal has nothing after the newest checkpoint.
func TestUnchanged(t *testing.T) {
	root, _ := restoreTree(t)
	s := histSandbox(t, root)
	cp0 := mustCheckpoint(t, s, Options{})
	if Unchanged(s, cp0.ID) {
		t.Error("unchanged with no kernel watch running")
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.StartWatching(wctx, nil); err != nil {
		t.Fatal(err)
	}
	<-s.Watch().Ready()
	<-s.Reconciled()
	cp1 := mustCheckpoint(t, s, Options{})
	if !Unchanged(s, cp1.ID) {
		t.Fatal("not unchanged right after a checkpoint of a watched root")
	}
	if Unchanged(s, cp0.ID) {
		t.Error("unchanged since a checkpoint that is not the newest")
	}
	if err := os.WriteFile(filepath.Join(root, "d", "b.txt"), []byte("behind its back"), 0o644); err != nil {
		t.Fatal(err)
	}
	if Unchanged(s, cp1.ID) {
		t.Error("unchanged after a write behind the sandbox's back")
	}
	cp2 := mustCheckpoint(t, s, Options{})
	if !Unchanged(s, cp2.ID) {
		t.Error("not unchanged right after the next checkpoint")
	}
}
