package daemon

import (
	"context"
	"fmt"
	"io/fs"

	"sandfs/core/checkpoint"
)

// Merge merges the fork name into the sandbox it was made from, three
// ways from the checkpoint it was made from (checkpoint.Merge); into,
// when given, must name that sandbox.
func (h *Host) Merge(ctx context.Context, name, into string, o checkpoint.MergeOptions) (string, checkpoint.MergeResult, error) {
	rec, err := h.forkRecord(name)
	if err != nil {
		return "", checkpoint.MergeResult{}, fmt.Errorf("sandbox %s is not a fork: only a fork merges: %w", name, fs.ErrInvalid)
	}
	if into != "" && into != rec.From {
		return "", checkpoint.MergeResult{}, fmt.Errorf("fork %s was made from %s: it merges into %s only: %w", name, rec.From, rec.From, fs.ErrInvalid)
	}
	parent, _ := h.Get(rec.From)
	fork, _ := h.Get(name)
	if parent == nil || fork == nil {
		return rec.From, checkpoint.MergeResult{}, fmt.Errorf("sandbox %s is not served: %w", rec.From, fs.ErrNotExist)
	}
	o.Checkpoint, o.Fork, o.Name = rec.Checkpoint, fork, name
	res, err := checkpoint.Merge(ctx, parent, o)
	return rec.From, res, err
}
