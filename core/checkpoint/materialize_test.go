package checkpoint

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMaterialize: a checkpoint's made tree is the tree as the checkpoint
// saw it (content, modes, owners, times, symlinks, empty directories),
// whatever changed in the root since; it is made once; a build that was
// stopped leaves nothing, and its leftovers go with the next.
func TestMaterialize(t *testing.T) {
	root, _ := restoreTree(t)
	sparse := filepath.Join(root, "sparse")
	f, err := os.Create(sparse)
	must(t, err)
	_, err = f.WriteAt([]byte("end"), 1<<20)
	must(t, err)
	must(t, f.Close())
	if os.Geteuid() == 0 {
		must(t, os.Lchown(filepath.Join(root, "d/c.txt"), 65534, 65534))
		must(t, os.Lchown(filepath.Join(root, "ln"), 65534, 65534))
	}
	old := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	must(t, unix.Lutimes(filepath.Join(root, "ln"), []unix.Timeval{unix.NsecToTimeval(old.UnixNano()), unix.NsecToTimeval(old.UnixNano())}))
	var lnSt unix.Stat_t
	must(t, unix.Lstat(filepath.Join(root, "ln"), &lnSt))
	want := treeDigest(t, root)
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	changeThings(t, s, root)

	// A stopped build: nothing named, its temporary tree removed.
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Materialize(stopped, s, cp.ID); !errors.Is(err, context.Canceled) {
		t.Fatalf("stopped build: %v", err)
	}
	lowers := filepath.Join(s.StateDir(), lowerDir)
	if names := dirNames(t, lowers); len(names) != 0 {
		t.Fatalf("after a stopped build %s holds %v", lowers, names)
	}
	must(t, os.MkdirAll(filepath.Join(lowers, lowerTemp+"crashed/x"), 0o700)) // a crash's leftovers

	l, err := Materialize(ctx, s, cp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !l.Made || l.Path != filepath.Join(lowers, cp.ID) || l.Entries != len(want) || l.Bytes < 1<<20 {
		t.Errorf("materialized %+v; want made at %s with %d entries", l, filepath.Join(lowers, cp.ID), len(want))
	}
	sameTree(t, "the made tree", want, treeDigest(t, l.Path))
	var st unix.Stat_t
	must(t, unix.Lstat(filepath.Join(l.Path, "ln"), &st))
	if st.Mtim != lnSt.Mtim || st.Mtim.Sec != old.Unix() {
		t.Errorf("symlink mtime %v, want %v", st.Mtim, lnSt.Mtim)
	}
	must(t, unix.Stat(filepath.Join(l.Path, "sparse"), &st))
	if st.Blocks*512 >= 1<<20 {
		t.Errorf("the sparse file takes %d bytes: its hole was filled", st.Blocks*512)
	}
	if names := dirNames(t, lowers); strings.Join(names, " ") != cp.ID {
		t.Errorf("%s holds %v; want the tree alone", lowers, names)
	}

	again, err := Materialize(ctx, s, cp.ID)
	if err != nil || again.Made || again.Path != l.Path {
		t.Errorf("second materialize: %+v, %v; want the same tree, not made again", again, err)
	}
	must(t, Delete(s, cp.ID))
	if names := dirNames(t, lowers); len(names) != 0 {
		t.Errorf("after the checkpoint's deletion %s holds %v", lowers, names)
	}
	if _, err := Materialize(ctx, s, "cp_000000000000"); !errors.Is(err, ErrUnknown) {
		t.Errorf("unknown checkpoint: %v", err)
	}
	if _, err := Materialize(ctx, s, "../../etc"); !errors.Is(err, ErrUnknown) {
		t.Errorf("an id that is a path: %v", err)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	must(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}
