package checkpoint

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestMaterializeLinks: a checkpoint made after another whose tree is
// made takes the entries it did not change as hard links to that tree's
// inodes and makes the others anew; its tree reads as the checkpoint, and
// stays whole once the first tree is deleted.
func TestMaterializeLinks(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "checkpoint materialization NOT TESTED: it needs root (trusted.* xattrs, an overlay mount)")
	}
	root, _ := restoreTree(t)
	mk(t, root, map[string]string{"same.txt": "kept", "sub/same2": "kept too", "ln2": "->same.txt"})
	s := histSandbox(t, root)
	first := mustCheckpoint(t, s, Options{})
	a, err := Materialize(ctx, s, first.ID)
	must(t, err)

	changeThings(t, s, root) // content, removal, mode, retargeted link, new files
	must(t, os.Lchown(filepath.Join(root, "d/c.txt"), 65534, 65534))
	later := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	must(t, os.Chtimes(filepath.Join(root, "deep/er/est/f"), later, later))
	want := treeDigest(t, root)
	second := mustCheckpoint(t, s, Options{})
	b, err := Materialize(ctx, s, second.ID)
	must(t, err)
	if !b.Made {
		t.Fatalf("second materialize: %+v, want made", b)
	}
	sameTree(t, "the linked tree through an overlay", want, treeDigest(t, readOnlyOverlay(t, b)))

	ino := func(dir, p string) uint64 {
		var st unix.Stat_t
		must(t, unix.Lstat(filepath.Join(dir, p), &st))
		return st.Ino
	}
	for _, tc := range []struct {
		path   string
		linked bool
	}{
		{"same.txt", true},
		{"sub/same2", true},
		{"ln2", true},
		{"a.txt", false},         // content
		{"x.sh", false},          // mode
		{"ln", false},            // target
		{"d/c.txt", false},       // owner
		{"deep/er/est/f", false}, // mtime
	} {
		if got := ino(a.Path, tc.path) == ino(b.Path, tc.path); got != tc.linked {
			t.Errorf("%s: shares the first tree's inode: %v, want %v", tc.path, got, tc.linked)
		}
	}

	must(t, Delete(s, first.ID))
	if _, err := os.Lstat(a.Path); !os.IsNotExist(err) {
		t.Fatalf("the first tree after its checkpoint's deletion: %v", err)
	}
	sameTree(t, "the linked tree once the first is gone", want, treeDigest(t, readOnlyOverlay(t, b)))
}

// TestMaterializeCreds: a made tree's owners and modes are the
// checkpoint's whatever a create in the state gives (a set-gid directory
// of another group, a umask that cuts bits the files keep).
func TestMaterializeCreds(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "checkpoint materialization NOT TESTED: it needs root (trusted.* xattrs, an overlay mount)")
	}
	root, _ := restoreTree(t)
	mk(t, root, map[string]string{"open.txt": "o", "sub/nobody.txt": "n"})
	must(t, os.Chmod(filepath.Join(root, "open.txt"), 0o666))
	must(t, os.Lchown(filepath.Join(root, "sub/nobody.txt"), 65534, 65534))
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	want := treeDigest(t, root)

	lowers := filepath.Join(s.StateDir(), lowerDir)
	must(t, os.Mkdir(lowers, 0o700))
	must(t, os.Chown(lowers, 0, 65534))
	must(t, os.Chmod(lowers, 0o700|os.ModeSetgid))
	old := unix.Umask(0o077)
	defer unix.Umask(old)
	l, err := Materialize(ctx, s, cp.ID)
	must(t, err)
	unix.Umask(old)
	sameTree(t, "a tree made under a set-gid directory and umask 077", want, treeDigest(t, readOnlyOverlay(t, l)))
}
