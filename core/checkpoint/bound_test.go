package checkpoint

import (
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"sandfs/core"

	"golang.org/x/sys/unix"
)

// TestCheckpointStoreBound: a checkpoint whose content could pass the
// store's bound is refused before it stores anything, saying the bound;
// a sparse file weighs its data; deleting a checkpoint makes room.
func TestCheckpointStoreBound(t *testing.T) {
	const kib = 1 << 10
	root := t.TempDir()
	write := func(name string, n int) {
		b := make([]byte, n)
		rand.Read(b)
		must(t, os.WriteFile(filepath.Join(root, name), b, 0o644))
	}
	for _, n := range []string{"a", "b", "c"} {
		write(n, 400*kib)
	}
	s, err := core.Open("default", root, core.Options{StateDir: t.TempDir(), CheckpointMaxSize: 1 << 20})
	must(t, err)
	defer s.Close()

	_, err = Create(ctx, s, Options{})
	var full *StoreFullError
	if !errors.As(err, &full) || !errors.Is(err, unix.ENOSPC) || full.Limit != 1<<20 || full.Need < 1200*kib {
		t.Fatalf("a checkpoint of 1.2 MiB under a 1 MiB bound: %v, want refused (ENOSPC) saying the bound and the need", err)
	}
	if n := countObjects(t, s); n != 0 {
		t.Errorf("%d objects stored by the refused checkpoint, want none", n)
	}

	must(t, os.Remove(filepath.Join(root, "c")))
	// A sparse file of 256 MiB holding 10 KiB weighs its data.
	f, err := os.Create(filepath.Join(root, "sparse"))
	must(t, err)
	must(t, f.Truncate(256<<20))
	_, err = f.WriteAt(make([]byte, 10*kib), 128<<20)
	must(t, err)
	f.Close()
	first, err := Create(ctx, s, Options{})
	if err != nil {
		t.Fatalf("a checkpoint of 800 KiB and a sparse file under a 1 MiB bound: %v", err)
	}
	size, limit, ok := StoreBytes(s)
	if !ok || limit != 1<<20 || size < 800*kib || size > 1<<20 {
		t.Errorf("store size %d, limit %d (%v); want 800 KiB to 1 MiB of 1 MiB", size, limit, ok)
	}

	write("d", 400*kib)
	if _, err := Create(ctx, s, Options{}); !errors.As(err, &full) {
		t.Fatalf("400 KiB more past the bound: %v, want refused", err)
	}
	// With b gone the tree is a, d and the sparse file: 800 KiB, which
	// fits only once the first checkpoint's objects are gone.
	must(t, os.Remove(filepath.Join(root, "b")))
	if _, err := Create(ctx, s, Options{}); !errors.As(err, &full) {
		t.Fatalf("d's 400 KiB beside the first checkpoint's 800: %v, want refused", err)
	}
	must(t, Delete(s, first.ID))
	if _, err := Create(ctx, s, Options{}); err != nil {
		t.Fatalf("after the first checkpoint was deleted: %v", err)
	}
}
