package grep

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
