package tar

import (
	"context"
	"testing"

	"sandfs/core"
	"sandfs/core/coretest"
	"sandfs/internal/testenv"
)

var ctx = context.Background()

func modes(t *testing.T, f func(t *testing.T, s *core.Sandbox, root string)) { coretest.Modes(t, f) }

func mk(t testing.TB, dir string, tree map[string]string) { t.Helper(); testenv.Mk(t, dir, tree) }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	return testenv.Snapshot(t, dir)
}

func sameSnapshot(t testing.TB, what string, before, after map[string]string) {
	t.Helper()
	testenv.SameSnapshot(t, what, before, after)
}
