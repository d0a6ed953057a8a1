package checkpoint

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/internal/testenv"
)

// TestCheckpointOutOfSpace: a checkpoint that runs out of state space
// fails with ENOSPC and leaves none of the objects it stored; the store's
// temps and unnamed objects left by a crash go at its next first use.
func TestCheckpointOutOfSpace(t *testing.T) {
	state := testenv.Tmpfs(t, "size=40m") // the journal's tail takes 32 MiB of it
	root := t.TempDir()
	for i := range 3 {
		b := make([]byte, 4<<20)
		rand.Read(b)
		must(t, os.WriteFile(filepath.Join(root, fmt.Sprintf("big%d", i)), b, 0o644))
	}
	s, err := core.Open("default", root, core.Options{StateDir: state})
	must(t, err)
	defer s.Close()
	if _, err := Create(ctx, s, Options{}); !errors.Is(err, unix.ENOSPC) {
		t.Fatalf("a checkpoint past the free space: %v, want ENOSPC", err)
	}
	if n := countObjects(t, s); n != 0 {
		t.Errorf("%d objects left by the failed checkpoint", n)
	}
	// A small one fits now, and a crash's leftovers go at the next open.
	must(t, os.Remove(filepath.Join(root, "big0")))
	must(t, os.Remove(filepath.Join(root, "big1")))
	if _, err := Create(ctx, s, Options{}); err != nil {
		t.Fatalf("a checkpoint that fits: %v", err)
	}
	kept := countObjects(t, s)
	s.Close()
	must(t, os.Remove(filepath.Join(state, cleanName))) // a daemon killed closes nothing
	objects := filepath.Join(state, "objects")
	must(t, os.WriteFile(filepath.Join(objects, "tmp-0123456789abcdef"), []byte("half"), 0o600))
	must(t, os.MkdirAll(filepath.Join(objects, "ab"), 0o700))
	must(t, os.WriteFile(filepath.Join(objects, "ab", "cdef"), []byte("orphan"), 0o600))
	s, err = core.Open("default", root, core.Options{StateDir: state})
	must(t, err)
	defer s.Close()
	if _, err := List(s); err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, s); n != kept {
		t.Errorf("%d objects after the reopen, want the %d a checkpoint names", n, kept)
	}
}
