package parallel

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestEach(t *testing.T) {
	boom := errors.New("boom")
	for _, c := range []struct {
		name    string
		n, fail int // fail: the item that fails (-1: none)
		items   int
		want    error
	}{
		{"all run", 4, -1, 100, nil},
		{"one worker", 1, -1, 10, nil},
		{"no items", 4, -1, 0, nil},
		{"an error ends the run", 3, 5, 1000, boom},
	} {
		t.Run(c.name, func(t *testing.T) {
			items := make([]int, c.items)
			for i := range items {
				items[i] = i
			}
			var ran, busy, most atomic.Int64
			err := Each(context.Background(), c.n, items, func(ctx context.Context, i int) error {
				b := busy.Add(1)
				defer busy.Add(-1)
				for m := most.Load(); b > m && !most.CompareAndSwap(m, b); m = most.Load() {
				}
				ran.Add(1)
				if i == c.fail {
					return boom
				}
				return nil
			})
			if !errors.Is(err, c.want) {
				t.Fatalf("Each: %v, want %v", err, c.want)
			}
			if most.Load() > int64(c.n) {
				t.Errorf("%d calls at once, want at most %d", most.Load(), c.n)
			}
			if c.want == nil && ran.Load() != int64(c.items) {
				t.Errorf("ran %d of %d", ran.Load(), c.items)
			}
			if c.want != nil && ran.Load() >= int64(c.items) {
				t.Errorf("ran all %d items after an error", ran.Load())
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Each(ctx, 2, []int{1, 2, 3}, func(context.Context, int) error { return nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("a context ended before: %v", err)
	}
}
