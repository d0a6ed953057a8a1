package httpkit

import (
	"sandfs/api"
	"sandfs/core/checkpoint"
)

// RestoreAnswer is a restore's result as every family answers it.
func RestoreAnswer(res checkpoint.RestoreResult) api.Restore {
	out := api.Restore{Checkpoint: res.Checkpoint, DryRun: res.DryRun, Undo: res.Undo, Written: res.Written,
		Removed: res.Removed, Skipped: make([]api.RestoreSkip, len(res.Skipped)), Count: len(res.Written) + len(res.Removed)}
	for i, sk := range res.Skipped {
		out.Skipped[i] = api.RestoreSkip{Path: sk.Path, Reason: sk.Reason, By: sk.By}
	}
	return out
}
