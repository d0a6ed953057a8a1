package natstest

import (
	"testing"

	"sandfs/core/history"
	"sandfs/core/journal"
)

// Journal is a journal on a real durable store in a t.TempDir(), closed
// when the test ends: what a sandbox of a daemon with history publishes.
func Journal(t testing.TB, keep history.Retention) (*history.Log, *journal.Journal) {
	t.Helper()
	h, err := history.Open(t.TempDir(), keep, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	j, err := journal.NewWith(h)
	if err != nil {
		t.Fatal(err)
	}
	return h, j
}
