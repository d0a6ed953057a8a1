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

// MergeAnswer is a merge's result as it is answered.
func MergeAnswer(fork, into string, res checkpoint.MergeResult) api.Merge {
	out := api.Merge{Fork: fork, Into: into, Checkpoint: res.Checkpoint, Strategy: res.Strategy, DryRun: res.DryRun, Undo: res.Undo,
		Written: res.Written, Removed: res.Removed, Conflicts: make([]api.MergeConflict, len(res.Conflicts)),
		Skipped: RestoreAnswer(checkpoint.RestoreResult{Skipped: res.Skipped}).Skipped, Count: len(res.Written) + len(res.Removed)}
	for i, c := range res.Conflicts {
		out.Conflicts[i] = api.MergeConflict{Path: c.Path, Why: c.Why, Took: c.Took, Base: mergeSide(c.Base), Ours: mergeSide(c.Ours),
			Theirs: mergeSide(c.Theirs), Diff: c.Diff, DiffTruncated: c.DiffTruncated, DiffUnavailable: c.DiffUnavailable}
	}
	return out
}

func mergeSide(s *checkpoint.MergeSide) *api.MergeSide {
	if s == nil {
		return nil
	}
	return &api.MergeSide{Type: s.Type, Mode: ModeString(s.Mode), Uid: s.Uid, Gid: s.Gid, Size: s.Size, SHA256: s.Hash, Target: s.Target, ETag: s.ETag}
}
