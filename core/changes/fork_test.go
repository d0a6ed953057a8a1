package changes

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/core/journal"
)

// forkPair is a parent with a checkpoint and a fork of it as changes sees
// one: a sandbox of its own (its own journal, no checkpoints) over a copy
// of the checkpoint's tree. The parent's tree moves on after the
// checkpoint, so a diff whose old side is the parent's tree now, or the
// fork's, is told apart from one whose old side is the checkpoint.
func forkPair(t *testing.T, base map[string]string) (parent, fork *core.Sandbox, froot, cp string) {
	t.Helper()
	proot := t.TempDir()
	mk(t, proot, base)
	parent, err := core.Open("main", proot, core.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { parent.Close() })
	c, err := checkpoint.Create(ctx, parent, checkpoint.Options{Name: "fork try-1"})
	if err != nil {
		t.Fatal(err)
	}
	for p := range base {
		if _, err := parent.WriteFile(ctx, "/"+p, strings.NewReader("the parent's later content\n"), core.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	froot = t.TempDir()
	mk(t, froot, base) // the made tree, as the overlay shows it before any write
	fork, err = core.Open("try-1", froot, core.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fork.Close() })
	return parent, fork, froot, c.ID
}

// TestChangesSinceFork: since a fork's making, the rows are the fork's
// journal; what existed then and the old side of each diff are the
// parent's checkpoint, read through the parent.
func TestChangesSinceFork(t *testing.T) {
	base := map[string]string{"m.txt": "one\ntwo\nthree\n", "gone.txt": "bye\n", "save.txt": "v1\n", "r.txt": "a\nb\n", "kept.txt": "kept\n"}
	parent, fork, froot, cp := forkPair(t, base)
	steps := []func() error{
		func() error { return write(fork, "/m.txt", "one\n2\nthree\n") },
		func() error { return fork.Remove(ctx, "/gone.txt", false) },
		// A save by rename over a file of the base, by an editor on the
		// mount: modified, not added, as only the base can tell.
		func() error { return saveByRename(fork, froot, "/save.txt", "v2\n") },
		func() error { return fork.Move(ctx, "/r.txt", "/r2.txt", core.MoveOptions{}) },
		func() error { return write(fork, "/r2.txt", "a\nB\n") },
		func() error { return write(fork, "/new.txt", "fresh\n") },
	}
	for i, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	cs, err := Since(ctx, fork, Query{SinceFork: &Fork{From: "main", Parent: parent, Checkpoint: cp}, Diff: true})
	if err != nil {
		t.Fatal(err)
	}
	if cs.SinceSeq != 0 || cs.SinceCheckpoint != cp || cs.SinceFork != "main" || cs.Lost {
		t.Errorf("since seq %d checkpoint %q fork %q lost %v", cs.SinceSeq, cs.SinceCheckpoint, cs.SinceFork, cs.Lost)
	}
	want := []struct {
		row, old, new string
		diffHead      string
		actor         string
	}{
		{"D /gone.txt", "bye\n", "", "--- a/gone.txt\n+++ b/gone.txt\n", "api"},
		{"M /m.txt", "one\ntwo\nthree\n", "one\n2\nthree\n", "--- a/m.txt\n+++ b/m.txt\n", "api"},
		{"A /new.txt", "", "fresh\n", "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n", "api"},
		{"R /r2.txt <- /r.txt", "a\nb\n", "a\nB\n", "--- a/r.txt\n+++ b/r2.txt\n", "api"},
		{"M /save.txt", "v1\n", "v2\n", "--- a/save.txt\n+++ b/save.txt\n", "fuse:vim"},
	}
	if len(cs.Rows) != len(want) {
		t.Fatalf("rows:\n%s\nwant %d", fmtRows(cs.Rows), len(want))
	}
	for i, w := range want {
		r := cs.Rows[i]
		if got := fmtRows(cs.Rows[i : i+1]); got != w.row {
			t.Errorf("row %d: %q, want %q", i, got, w.row)
			continue
		}
		if r.DiffUnavailable != "" || r.Binary || !strings.HasPrefix(r.Diff, w.diffHead) {
			t.Errorf("%s: diff %q unavailable %q binary %v", r.Path, r.Diff, r.DiffUnavailable, r.Binary)
			continue
		}
		if got := applyPatch(t, []byte(w.old), r.Diff); string(got) != w.new {
			t.Errorf("%s: patched %q, want %q", r.Path, got, w.new)
		}
		if r.First.Seq == 0 || len(r.Actors) != 1 || r.Actors[0] != w.actor {
			t.Errorf("%s: first seq %d actors %v", r.Path, r.First.Seq, r.Actors)
		}
	}
}

// TestChangesSinceForkNoBase: a fork whose parent is not served, or whose
// checkpoint is gone, still has its rows; the diffs say why they have no
// old side, and a save by rename cannot be known as modified.
func TestChangesSinceForkNoBase(t *testing.T) {
	parent, fork, froot, cp := forkPair(t, map[string]string{"m.txt": "old\n", "save.txt": "v1\n"})
	if err := write(fork, "/m.txt", "new\n"); err != nil {
		t.Fatal(err)
	}
	if err := saveByRename(fork, froot, "/save.txt", "v2\n"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		base Fork
		why  string
	}{
		{"parent not served", Fork{From: "main", Checkpoint: cp}, "its parent main is not served"},
		{"checkpoint gone", Fork{From: "main", Parent: parent, Checkpoint: "cp_gone"}, "checkpoint cp_gone of main cannot be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := Since(ctx, fork, Query{SinceFork: &tc.base, Diff: true})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := fmtRows(cs.Rows), "M /m.txt\nA /save.txt"; got != want {
				t.Fatalf("rows %q, want %q", got, want)
			}
			if m := cs.Rows[0]; m.Diff != "" || !strings.Contains(m.DiffUnavailable, tc.why) {
				t.Errorf("m.txt: diff %q unavailable %q", m.Diff, m.DiffUnavailable)
			}
		})
	}
	if _, err := Since(ctx, fork, Query{SinceFork: &Fork{From: "main", Parent: parent, Checkpoint: cp}, SinceSeq: 3}); !errors.Is(err, ErrQuery) {
		t.Errorf("since a fork and a seq: %v", err)
	}
}

// saveByRename saves content to p as an editor on the mount does (a temp
// file renamed over it), with the events the mount tells of it.
func saveByRename(s *core.Sandbox, root, p, content string) error {
	tmp := p + ".swp"
	if err := os.WriteFile(filepath.Join(root, tmp), []byte(content), 0o644); err != nil {
		return err
	}
	if err := os.Rename(filepath.Join(root, tmp), filepath.Join(root, p)); err != nil {
		return err
	}
	for _, e := range []journal.Event{ev(journal.Create, tmp, "fuse:vim"), ev(journal.Write, tmp, "fuse:vim"), ev(journal.Rename, p, tmp, "fuse:vim")} {
		s.Journal().Append(e)
	}
	return nil
}

func write(s *core.Sandbox, p, content string) error {
	_, err := s.WriteFile(ctx, p, strings.NewReader(content), core.WriteOptions{})
	return err
}
