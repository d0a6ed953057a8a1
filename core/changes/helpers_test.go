package changes

import (
	"context"
	"testing"

	"sandfs/internal/testenv"
)

var ctx = context.Background()

func mk(t testing.TB, dir string, tree map[string]string) { t.Helper(); testenv.Mk(t, dir, tree) }
