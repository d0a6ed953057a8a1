package checkpoint

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"testing"

	"sandfs/core"
)

// forkOf makes the parent of tree, its checkpoint, and a fork: a second
// sandbox whose tree is a copy of the parent's.
func forkOf(t *testing.T, tree map[string]string) (s, f *core.Sandbox, root, fork string, cp Checkpoint) {
	t.Helper()
	root = t.TempDir()
	mk(t, root, tree)
	s = histSandbox(t, root)
	cp = mustCheckpoint(t, s, Options{})
	fork = t.TempDir()
	if out, err := exec.Command("cp", "-a", root+"/.", fork).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	return s, histSandbox(t, fork), root, fork, cp
}

// Each kind of conflict is found, and the sides it names are the ones
// each sandbox has.
func TestMergeConflictKinds(t *testing.T) {
	rm := func(t *testing.T, s *core.Sandbox, p string) { must(t, s.Remove(ctx, p, true)) }
	for _, tc := range []struct {
		name           string
		ours, theirs   func(t *testing.T, s *core.Sandbox)
		base, inO, inT bool
		wantConflict   bool
		more           []string // conflicts beneath, after the path's own
	}{
		{name: "modify/modify", ours: func(t *testing.T, s *core.Sandbox) { write(t, s, "/f", "ours") },
			theirs: func(t *testing.T, s *core.Sandbox) { write(t, s, "/f", "theirs") }, base: true, inO: true, inT: true, wantConflict: true},
		{name: "modify/delete", ours: func(t *testing.T, s *core.Sandbox) { write(t, s, "/f", "ours") },
			theirs: func(t *testing.T, s *core.Sandbox) { rm(t, s, "/f") }, base: true, inO: true, wantConflict: true},
		{name: "delete/modify", ours: func(t *testing.T, s *core.Sandbox) { rm(t, s, "/f") },
			theirs: func(t *testing.T, s *core.Sandbox) { write(t, s, "/f", "theirs") }, base: true, inT: true, wantConflict: true},
		{name: "add/add", ours: func(t *testing.T, s *core.Sandbox) { write(t, s, "/g", "ours") },
			theirs: func(t *testing.T, s *core.Sandbox) { write(t, s, "/g", "theirs") }, inO: true, inT: true, wantConflict: true},
		{name: "add/add alike", ours: func(t *testing.T, s *core.Sandbox) { write(t, s, "/g", "same") },
			theirs: func(t *testing.T, s *core.Sandbox) { write(t, s, "/g", "same") }},
		{name: "delete/delete", ours: func(t *testing.T, s *core.Sandbox) { rm(t, s, "/f") },
			theirs: func(t *testing.T, s *core.Sandbox) { rm(t, s, "/f") }},
		{name: "file/dir", ours: func(t *testing.T, s *core.Sandbox) { write(t, s, "/f", "ours") },
			theirs: func(t *testing.T, s *core.Sandbox) { rm(t, s, "/f"); write(t, s, "/f/in", "a dir now") },
			base:   true, inO: true, inT: true, wantConflict: true, more: []string{"/f/in"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, f, root, _, cp := forkOf(t, map[string]string{"f": "base", "other": "o"})
			tc.ours(t, s)
			tc.theirs(t, f)
			before := treeDigest(t, root)
			res, err := Merge(ctx, s, MergeOptions{Checkpoint: cp.ID, Fork: f, Name: "k"})
			if !tc.wantConflict {
				if err != nil || len(res.Conflicts) != 0 || len(res.Written)+len(res.Removed) != 0 {
					t.Fatalf("merge: %v %+v", err, res)
				}
				return
			}
			if !errors.Is(err, ErrConflicts) || len(res.Conflicts) != 1+len(tc.more) {
				t.Fatalf("merge: %v, conflicts %+v", err, res.Conflicts)
			}
			for i, p := range tc.more {
				if res.Conflicts[1+i].Path != p {
					t.Errorf("conflict %d: %+v, want %s", 1+i, res.Conflicts[1+i], p)
				}
			}
			c := res.Conflicts[0]
			if (c.Base != nil) != tc.base || (c.Ours != nil) != tc.inO || (c.Theirs != nil) != tc.inT {
				t.Errorf("sides: base %+v ours %+v theirs %+v", c.Base, c.Ours, c.Theirs)
			}
			sameTree(t, "after a failed merge", before, treeDigest(t, root))
		})
	}
}

// A writer racing merges of the same path: every merge either writes
// the fork's bytes whole or skips the path as raced; the file is never
// torn and no temp is left.
func TestMergeRacingWriter(t *testing.T) {
	s, f, root, _, cp := forkOf(t, map[string]string{"hot": string(hotVersion(0))})
	if _, err := f.WriteFile(ctx, "/hot", bytes.NewReader(hotVersion(999)), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	done := raceHot(t, s)
	written, raced := 0, 0
	for i := 0; i < 20; i++ {
		res, err := Merge(ctx, s, MergeOptions{Checkpoint: cp.ID, Fork: f, Name: "race", Strategy: StrategyTheirs})
		if err != nil {
			t.Fatal(err)
		}
		written += len(res.Written)
		raced += len(res.Skipped)
		for _, sk := range res.Skipped {
			if sk.Reason != skipRaced {
				t.Errorf("skip %+v", sk)
			}
		}
		wantWholeHot(t, root, 999)
	}
	<-done
	t.Logf("%d merges wrote, %d were skipped as raced", written, raced)
	if ents, _ := os.ReadDir(root); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}
