// Package parallel runs one function over many items with a few workers.
//
// The rule: at most n calls at once, items handed out in order, and the
// first error ends the run: no call starts once it is known, the calls
// under way finish, and that error is answered (or the context's cause,
// when the caller's context ended first). Nothing is left running when
// Each returns.
package parallel

import (
	"context"
	"sync"
)

// Each calls fn on every item, by at most n workers at once; ctx passed
// to fn ends at the first error.
func Each[T any](ctx context.Context, n int, items []T, fn func(context.Context, T) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan T)
	var wg sync.WaitGroup
	for range min(max(n, 1), len(items)) {
		wg.Go(func() {
			for it := range next {
				if ctx.Err() != nil {
					return
				}
				if err := fn(ctx, it); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
feed:
	for _, it := range items {
		if ctx.Err() != nil {
			break
		}
		select {
		case next <- it:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx)
}
