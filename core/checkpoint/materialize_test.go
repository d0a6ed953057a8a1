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

	"sandfs/internal/overlay"
	"sandfs/internal/testenv"
)

// TestMaterialize: a checkpoint's made tree, read through an overlay with
// the store as its data layer, is the tree as the checkpoint saw it
// (content, modes, owners, times, symlinks, empty directories, holes),
// whatever changed in the root since; it copies no content; it is made
// once; a build that was stopped leaves nothing, and its leftovers go with
// the next.
func TestMaterialize(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "checkpoint materialization NOT TESTED: it needs root (trusted.* xattrs, an overlay mount)")
	}
	root, _ := restoreTree(t)
	sparse := filepath.Join(root, "sparse")
	f, err := os.Create(sparse)
	must(t, err)
	_, err = f.WriteAt([]byte("end"), 1<<20)
	must(t, err)
	must(t, f.Close())
	must(t, os.Lchown(filepath.Join(root, "d/c.txt"), 65534, 65534))
	must(t, os.Lchown(filepath.Join(root, "ln"), 65534, 65534))
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
	if !l.Made || l.Path != filepath.Join(lowers, cp.ID) || l.Data != filepath.Join(s.StateDir(), "objects") || l.Entries != len(want) {
		t.Errorf("materialized %+v; want made at %s with %d entries", l, filepath.Join(lowers, cp.ID), len(want))
	}
	var st unix.Stat_t
	must(t, unix.Stat(filepath.Join(l.Path, "sparse"), &st))
	if st.Size != 1<<20+3 || st.Blocks*512 > 64<<10 { // a block for the xattrs at most, on some filesystems
		t.Errorf("the made tree's file holds %d blocks for %d bytes: content was copied", st.Blocks, st.Size)
	}
	view := readOnlyOverlay(t, l)
	sameTree(t, "the made tree through an overlay", want, treeDigest(t, view))
	must(t, unix.Lstat(filepath.Join(view, "ln"), &st))
	if st.Mtim != lnSt.Mtim || st.Mtim.Sec != old.Unix() {
		t.Errorf("symlink mtime %v, want %v", st.Mtim, lnSt.Mtim)
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

// readOnlyOverlay mounts l read-only at a new directory, for the test.
func readOnlyOverlay(t *testing.T, l Lower) string {
	t.Helper()
	mnt := t.TempDir()
	hold := func(p string) int {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		must(t, err)
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	must(t, overlay.Mount(hold(mnt), overlay.Layers{Lower: []int{hold(l.Path)}, Data: []int{hold(l.Data)}, Upper: -1}))
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	return mnt
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

// TestPin: a pinned checkpoint is not deleted, by hand or by the
// schedule's pruning, until its last pin goes.
func TestPin(t *testing.T) {
	root, _ := restoreTree(t)
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	must(t, Pin(s, cp.ID, "try-1"))
	must(t, Pin(s, cp.ID, "try-2"))
	if err := Delete(s, cp.ID); !errors.Is(err, ErrPinned) || !errors.Is(err, unix.EBUSY) {
		t.Fatalf("delete of a pinned checkpoint: %v", err)
	}
	for _, bad := range []string{"", "..", "a/b", "Upper"} {
		if err := Pin(s, cp.ID, bad); !errors.Is(err, unix.EINVAL) {
			t.Errorf("pin by %q: %v", bad, err)
		}
	}
	if err := Pin(s, "cp_000000000000", "try-3"); !errors.Is(err, ErrUnknown) {
		t.Errorf("pin of an unknown checkpoint: %v", err)
	}
	must(t, Unpin(s, cp.ID, "try-1"))
	must(t, Unpin(s, cp.ID, "try-1")) // twice: nothing to do
	if err := Delete(s, cp.ID); !errors.Is(err, ErrPinned) {
		t.Fatalf("delete with one pin left: %v", err)
	}
	must(t, Unpin(s, cp.ID, "try-2"))
	must(t, Delete(s, cp.ID))
	if _, err := ByID(s, cp.ID); !errors.Is(err, ErrUnknown) {
		t.Errorf("after the delete: %v", err)
	}
}
