package api

import "time"

// The named family's checkpoints and restore (api.md §5a).

// Checkpoint is one checkpoint of a sandbox.
type Checkpoint struct {
	ID           string    `json:"id"`
	Name         string    `json:"name"`
	Reason       string    `json:"reason"`
	Seq          uint64    `json:"seq"`
	CreatedAt    time.Time `json:"createdAt"`
	Files        int64     `json:"files"`
	Dirs         int64     `json:"dirs"`
	Symlinks     int64     `json:"symlinks"`
	Bytes        int64     `json:"bytes"`
	NewBytes     int64     `json:"newBytes"`
	SkipExcluded bool      `json:"skipExcluded"`
}

// CheckpointList is GET /checkpoints, oldest first.
type CheckpointList struct {
	Checkpoints []Checkpoint `json:"checkpoints"`
	Count       int          `json:"count"`
}

// CheckpointDeleted is DELETE /checkpoints/{id}.
type CheckpointDeleted struct {
	ID      string `json:"id"`
	Deleted bool   `json:"deleted"`
}

// CheckpointRequest is POST /checkpoints's optional body.
type CheckpointRequest struct {
	Name         string `json:"name"`
	SkipExcluded bool   `json:"skipExcluded"`
}

// RestoreSkip is a path a restore left alone, and why.
type RestoreSkip struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
	By     string `json:"by"`
}

// Restore is POST /restore's answer.
type Restore struct {
	Checkpoint string        `json:"checkpoint"`
	DryRun     bool          `json:"dryRun"`
	Undo       string        `json:"undo"`
	Written    []string      `json:"written"`
	Removed    []string      `json:"removed"`
	Skipped    []RestoreSkip `json:"skipped"`
	Count      int           `json:"count"` // written + removed
}
