package core

import (
	"context"
	"io"
	"testing"

	"sandfs/core/journal"
	"sandfs/internal/testenv"
)

var ctx = context.Background()

// Some of core's tests exercise a rule of core through an operation of a
// subpackage: a tar row in the events, quota, setid and escape tables,
// the changes set that a hole of the kernel watch makes lost. They cannot
// import the subpackage, which imports core, so they call it through
// these, which subpackages_test.go, an external test file of the same
// binary, sets through SetHooks.
var (
	// extractTar is tar.Extract in merge mode.
	extractTar func(ctx context.Context, s *Sandbox, dest string, r io.Reader) error
	// changesLost is the Lost of changes.Since for the start seq and path.
	changesLost func(ctx context.Context, s *Sandbox, since uint64, path string) (bool, error)
)

// Hooks are the subpackage operations core's tests call; see extractTar.
type Hooks struct {
	ExtractTar  func(ctx context.Context, s *Sandbox, dest string, r io.Reader) error
	ChangesLost func(ctx context.Context, s *Sandbox, since uint64, path string) (bool, error)
}

// SetHooks sets the hooks; see extractTar.
func SetHooks(h Hooks) { extractTar, changesLost = h.ExtractTar, h.ChangesLost }

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
			if !walk && !s.Root().Openat2() {
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
