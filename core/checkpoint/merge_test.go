package checkpoint

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/journal"
	"sandfs/core/quota"
)

// Merging a fork back, three ways. The fork here is a second sandbox whose
// tree starts as a copy of the parent's at the checkpoint: what Merge
// reads of it is its journal and its tree, whatever its root is made of.

type mergeCase struct {
	s, f       *core.Sandbox
	root, fork string
	cp         Checkpoint
}

// mergeSetup makes the parent, its checkpoint, the fork, and one of each
// change on either side: what the fork alone changed, what both changed
// alike, what both changed differently.
func mergeSetup(t *testing.T) mergeCase {
	t.Helper()
	root := t.TempDir()
	mk(t, root, map[string]string{"a.txt": "alpha\n", "b.txt": "beta\n", "c.txt": "one\ntwo\nthree\n", "d/x": "x", "d/y": "y",
		"gone/z": "z", "e.txt": "e", "ln": "->a.txt", "keep.txt": "keep"})
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{Name: "fork try"})
	fork := t.TempDir()
	if out, err := exec.Command("cp", "-a", root+"/.", fork).CombinedOutput(); err != nil {
		t.Fatalf("cp -a: %v %s", err, out)
	}
	f := histSandbox(t, fork)
	write(t, f, "/a.txt", "alpha, the fork's\n")
	write(t, f, "/new/n.txt", "new")
	must(t, f.Remove(ctx, "/gone", true))
	write(t, f, "/c.txt", "one\ntwo, the fork's\nthree\n")
	_, err := f.Chmod(ctx, "/e.txt", 0o600, false)
	must(t, err)
	must(t, os.Remove(filepath.Join(fork, "ln")))
	must(t, os.Symlink("b.txt", filepath.Join(fork, "ln")))
	write(t, f, "/d/x", "x, both")
	must(t, f.Remove(ctx, "/d", true))

	write(t, s, "/b.txt", "beta, ours\n")
	write(t, s, "/c.txt", "one\ntwo, ours\nthree\n")
	write(t, s, "/d/x", "x, both")
	write(t, s, "/d/ours.txt", "ours")
	return mergeCase{s: s, f: f, root: root, fork: fork, cp: cp}
}

func readT(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	if err != nil {
		return "(none)"
	}
	return string(b)
}

func TestMergeStrategies(t *testing.T) {
	for _, tc := range []struct {
		strategy     string
		dry          bool
		wantErr      error
		written      []string
		removed      []string
		took         string
		c, d, ours   string // /c.txt, /d/x, /d/ours.txt after
		unchanged    bool
		conflictDiff string
	}{
		{strategy: "", wantErr: ErrConflicts, unchanged: true, c: "one\ntwo, ours\nthree\n", d: "x, both", ours: "ours"},
		{strategy: StrategyFail, dry: true, wantErr: ErrConflicts, unchanged: true, c: "one\ntwo, ours\nthree\n", d: "x, both", ours: "ours"},
		{strategy: StrategyOurs, took: "ours",
			written: []string{"/a.txt", "/e.txt", "/ln", "/new", "/new/n.txt"}, removed: []string{"/d/y", "/gone"},
			c: "one\ntwo, ours\nthree\n", d: "x, both", ours: "ours"},
		{strategy: StrategyOurs, dry: true, took: "ours", unchanged: true,
			written: []string{"/a.txt", "/e.txt", "/ln", "/new", "/new/n.txt"}, removed: []string{"/d/y", "/gone"},
			c: "one\ntwo, ours\nthree\n", d: "x, both", ours: "ours"},
		{strategy: StrategyTheirs, took: "theirs",
			written: []string{"/a.txt", "/c.txt", "/e.txt", "/ln", "/new", "/new/n.txt"}, removed: []string{"/d", "/gone"},
			c: "one\ntwo, the fork's\nthree\n", d: "(none)", ours: "(none)"},
	} {
		t.Run(fmt.Sprintf("%s dry=%v", tc.strategy, tc.dry), func(t *testing.T) {
			m := mergeSetup(t)
			before := treeDigest(t, m.root)
			cps, _ := List(m.s)
			res, err := Merge(ctx, m.s, MergeOptions{Checkpoint: m.cp.ID, Fork: m.f, Name: "try", Strategy: tc.strategy, DryRun: tc.dry})
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("merge: %v, want %v", err, tc.wantErr)
			}
			var paths []string
			for _, c := range res.Conflicts {
				paths = append(paths, c.Path)
				if c.Took != tc.took {
					t.Errorf("%s took %q, want %q", c.Path, c.Took, tc.took)
				}
			}
			if got := strings.Join(paths, " "); got != "/c.txt /d /d/x" {
				t.Errorf("conflicts %s", got)
			}
			cc := res.Conflicts[0]
			wantDiff := "--- a/c.txt\n+++ b/c.txt\n@@ -1,3 +1,3 @@\n one\n-two, ours\n+two, the fork's\n three\n"
			if cc.Diff != wantDiff || cc.Base == nil || cc.Ours == nil || cc.Theirs == nil || cc.Ours.ETag == "" || cc.Base.Hash == cc.Ours.Hash {
				t.Errorf("conflict %+v (base %+v ours %+v theirs %+v)", cc, cc.Base, cc.Ours, cc.Theirs)
			}
			if res.Conflicts[1].Theirs != nil || !strings.Contains(res.Conflicts[1].Why, "/d/ours.txt") {
				t.Errorf("/d conflict %+v", res.Conflicts[1])
			}
			if fmt.Sprint(res.Written) != fmt.Sprint(tc.written) || fmt.Sprint(res.Removed) != fmt.Sprint(tc.removed) || len(res.Skipped) != 0 {
				t.Errorf("written %v removed %v skipped %v", res.Written, res.Removed, res.Skipped)
			}
			if got := readT(t, filepath.Join(m.root, "c.txt")); got != tc.c {
				t.Errorf("c.txt %q", got)
			}
			if got := readT(t, filepath.Join(m.root, "d/x")); got != tc.d {
				t.Errorf("d/x %q", got)
			}
			if got := readT(t, filepath.Join(m.root, "d/ours.txt")); got != tc.ours {
				t.Errorf("d/ours.txt %q", got)
			}
			if got := readT(t, filepath.Join(m.root, "b.txt")); got != "beta, ours\n" {
				t.Errorf("b.txt, which only ours changed: %q", got)
			}
			after, _ := List(m.s)
			if tc.unchanged {
				sameTree(t, "after a merge that changed nothing", before, treeDigest(t, m.root))
				if res.Undo != "" || len(after) != len(cps) {
					t.Errorf("undo %q, checkpoints %d then %d", res.Undo, len(cps), len(after))
				}
				return
			}
			// The usage counts what the merge changed: what a scan finds.
			if got, want := m.s.Quota().Usage(), scanUsage(t, m.s); got.Bytes != want.Bytes || got.Entries != want.Entries {
				t.Errorf("usage after the merge %+v, a scan finds %+v", got, want)
			}
			if got := readT(t, filepath.Join(m.root, "a.txt")); got != "alpha, the fork's\n" {
				t.Errorf("a.txt %q", got)
			}
			if got := readT(t, filepath.Join(m.root, "new/n.txt")); got != "new" {
				t.Errorf("new/n.txt %q", got)
			}
			if tgt, _ := os.Readlink(filepath.Join(m.root, "ln")); tgt != "b.txt" {
				t.Errorf("ln -> %q", tgt)
			}
			if fi, err := os.Stat(filepath.Join(m.root, "e.txt")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("e.txt %v %v", fi.Mode(), err)
			}
			if _, err := os.Lstat(filepath.Join(m.root, "gone")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("gone/ still there: %v", err)
			}
			undo, err := ByID(m.s, res.Undo)
			if err != nil || undo.Reason != ReasonBeforeMerge {
				t.Fatalf("undo %+v %v", undo, err)
			}
			seen := map[string]bool{}
			m.s.Journal().Scan(ctx, undo.Seq, func(e journal.Event) bool {
				if e.Origin != journal.API || e.Actor != "merge:try" {
					t.Errorf("event %+v is not the merge's", e)
				}
				seen[e.Path] = true
				return true
			})
			for _, p := range append(tc.written, tc.removed...) {
				if !seen[p] {
					t.Errorf("no event for %s", p)
				}
			}
			// A restore of the undo brings the tree back as it was.
			if _, err := Restore(ctx, m.s, RestoreOptions{Checkpoint: res.Undo}); err != nil {
				t.Fatal(err)
			}
			sameTree(t, "after the undo", before, treeDigest(t, m.root))
			// Merged again, nothing is left to write.
			again, err := Merge(ctx, m.s, MergeOptions{Checkpoint: m.cp.ID, Fork: m.f, Name: "try", Strategy: tc.strategy})
			must(t, err)
			if len(again.Written) != len(tc.written) {
				t.Errorf("after the undo, the merge wrote %v", again.Written)
			}
			third, err := Merge(ctx, m.s, MergeOptions{Checkpoint: m.cp.ID, Fork: m.f, Name: "try", Strategy: tc.strategy})
			must(t, err)
			if len(third.Written)+len(third.Removed) != 0 {
				t.Errorf("a merge done twice wrote %v removed %v", third.Written, third.Removed)
			}
		})
	}
}

func TestMergeRefusals(t *testing.T) {
	m := mergeSetup(t)
	for _, tc := range []struct {
		name string
		o    MergeOptions
		want error
	}{
		{"bad strategy", MergeOptions{Checkpoint: m.cp.ID, Fork: m.f, Strategy: "mine"}, error(unix.EINVAL)},
		{"no fork", MergeOptions{Checkpoint: m.cp.ID}, error(unix.EINVAL)},
		{"itself", MergeOptions{Checkpoint: m.cp.ID, Fork: m.s}, error(unix.EINVAL)},
		{"unknown checkpoint", MergeOptions{Checkpoint: "cp_000000000000", Fork: m.f}, ErrUnknown},
		{"dotdot path", MergeOptions{Checkpoint: m.cp.ID, Fork: m.f, Paths: []string{"/a/../b"}}, error(unix.EINVAL)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := treeDigest(t, m.root)
			if _, err := Merge(ctx, m.s, tc.o); !errors.Is(err, tc.want) {
				t.Errorf("merge: %v, want %v", err, tc.want)
			}
			sameTree(t, "after a refused merge", before, treeDigest(t, m.root))
		})
	}
}

// A merge of some paths only takes the fork's changes there.
func TestMergePaths(t *testing.T) {
	m := mergeSetup(t)
	res, err := Merge(ctx, m.s, MergeOptions{Checkpoint: m.cp.ID, Fork: m.f, Name: "try", Paths: []string{"/a.txt", "/new"}})
	must(t, err)
	if fmt.Sprint(res.Written) != "[/a.txt /new /new/n.txt]" || len(res.Removed)+len(res.Conflicts) != 0 {
		t.Errorf("written %v removed %v conflicts %v", res.Written, res.Removed, res.Conflicts)
	}
	if got := readT(t, filepath.Join(m.root, "gone/z")); got != "z" {
		t.Errorf("gone/z, outside the paths: %q", got)
	}
}

// scanUsage is the usage a walk of the tree finds (it sets it, too).
func scanUsage(t *testing.T, s *core.Sandbox) quota.Usage {
	t.Helper()
	u, err := s.Quota().Scan(ctx)
	must(t, err)
	return u
}
