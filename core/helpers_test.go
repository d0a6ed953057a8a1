package core

import (
	"context"
	"io"
	"testing"

	"sandfs/core/journal"
	"sandfs/internal/testenv"
)

var ctx = context.Background()

// extractTar is tar.Extract (merge mode) for the rows of core's tests that
// extract an archive. Those tests cannot import package tar, which imports
// core; tarhook_test.go, an external test file of the same binary, sets
// it through SetExtractTar.
var extractTar func(ctx context.Context, s *Sandbox, dest string, r io.Reader) error

// SetExtractTar sets extractTar; see there.
func SetExtractTar(f func(ctx context.Context, s *Sandbox, dest string, r io.Reader) error) {
	extractTar = f
}

// modes runs f once with openat2 resolution (where the kernel has it) and
// once with the user-space walk, each on a fresh root.
func modes(t *testing.T, f func(t *testing.T, s *Sandbox, root string)) {
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			s, err := Open("default", root, Options{NoOpenat2: walk})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if !walk && !s.UsesOpenat2() {
				t.Log("openat2 unavailable here; both runs use the walk")
			}
			f(t, s, root)
		})
	}
}

// mk, snapshot and sameSnapshot are testenv's, shared with core's
// subpackages.
func mk(t testing.TB, dir string, tree map[string]string) { t.Helper(); testenv.Mk(t, dir, tree) }

func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	return testenv.Snapshot(t, dir)
}

func sameSnapshot(t testing.TB, what string, before, after map[string]string) {
	t.Helper()
	testenv.SameSnapshot(t, what, before, after)
}

func journalAll(s *Sandbox) []journal.Event {
	es, _ := s.Journal().Since(0, 100000)
	return es
}
