package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestForkLinkedTree: a second fork of a live sandbox reads a tree whose
// unchanged files are hard links to the first fork's tree; changing
// those files in the second fork (mode, content, name, removal) changes
// neither the first fork, nor the parent, nor the shared inodes.
func TestForkLinkedTree(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "forks NOT TESTED: an overlay mount needs root")
	}
	d, dir := startRegistry(t)
	createSandbox(t, d, "main")
	main := filepath.Join(dir, "main")
	testenv.Mk(t, main, map[string]string{"a.txt": "alpha", "b.txt": "beta", "c.txt": "gamma", "d/e.txt": "epsilon", "ln": "->a.txt"})
	fork := func(name string) (root, cp string) {
		st, b := postSandbox(t, d, map[string]any{"name": name, "from": "main"})
		var made struct{ Checkpoint string }
		if json.Unmarshal(b, &made); st != http.StatusCreated || made.Checkpoint == "" {
			t.Fatalf("fork %s: %d %s", name, st, b)
		}
		discardAtCleanup(t, d, name)
		return filepath.Join(d.State, "forks", name, "root"), made.Checkpoint
	}
	root1, cp1 := fork("one")
	want1 := digestTree(t, root1)
	must(t, os.WriteFile(filepath.Join(main, "c.txt"), []byte("gamma, the parent's"), 0o644))
	root2, cp2 := fork("two")
	wantMain := digestTree(t, main)
	if got := digestTree(t, root2); got != wantMain {
		t.Fatalf("the second fork's tree:\n%s\nwant the parent's:\n%s", got, wantMain)
	}

	lower := filepath.Join(d.State, "sandboxes", "main", "lower")
	ino := func(p string) uint64 {
		var st unix.Stat_t
		must(t, unix.Lstat(p, &st))
		return st.Ino
	}
	for _, c := range []struct {
		path   string
		linked bool
	}{{"a.txt", true}, {"d/e.txt", true}, {"ln", true}, {"c.txt", false}} {
		if got := ino(filepath.Join(lower, cp1, c.path)) == ino(filepath.Join(lower, cp2, c.path)); got != c.linked {
			t.Errorf("%s: the two trees share its inode: %v, want %v", c.path, got, c.linked)
		}
	}
	lowerBefore := digestTree(t, filepath.Join(lower, cp1))

	must(t, os.Chmod(filepath.Join(root2, "a.txt"), 0o600))
	must(t, os.WriteFile(filepath.Join(root2, "d/e.txt"), []byte("epsilon, the fork's"), 0o644))
	must(t, os.Rename(filepath.Join(root2, "b.txt"), filepath.Join(root2, "b2.txt")))
	must(t, os.Remove(filepath.Join(root2, "ln")))

	wantFile(t, filepath.Join(root2, "d/e.txt"), "epsilon, the fork's")
	wantFile(t, filepath.Join(root2, "b2.txt"), "beta")
	if fi, err := os.Stat(filepath.Join(root2, "a.txt")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("the second fork's a.txt: %v %v, want mode 0600", fi, err)
	}
	if got := digestTree(t, root1); got != want1 {
		t.Errorf("the first fork after the second's changes:\n%s\nwant:\n%s", got, want1)
	}
	if got := digestTree(t, main); got != wantMain {
		t.Errorf("the parent after the second fork's changes:\n%s\nwant:\n%s", got, wantMain)
	}
	if got := digestTree(t, filepath.Join(lower, cp1)); got != lowerBefore {
		t.Errorf("the first made tree after the second fork's changes:\n%s\nwant:\n%s", got, lowerBefore)
	}
}
