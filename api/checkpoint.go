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

// MergeRequest is POST /v1/sandboxes/{fork}/merge's body: every field
// may be left out ("into": the fork's parent; "strategy": "fail").
type MergeRequest struct {
	Into        *string  `json:"into"`
	DryRun      *bool    `json:"dry_run"`
	DryRunCamel *bool    `json:"dryRun"`
	Paths       []string `json:"paths"`
	Strategy    *string  `json:"strategy"`
}

// MergeSide is one side of a conflict; absent (null) where that side has
// no such path.
type MergeSide struct {
	Type   string `json:"type"` // "file", "dir", "symlink"
	Mode   string `json:"mode"` // octal permission and special bits, "0644"
	Uid    uint32 `json:"uid"`
	Gid    uint32 `json:"gid"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256,omitempty"` // a file's content
	Target string `json:"target,omitempty"` // a symlink's
	ETag   string `json:"etag,omitempty"`   // ours and theirs: the path's ETag in its sandbox now
}

// MergeConflict is a path both sides changed, differently.
type MergeConflict struct {
	Path            string     `json:"path"`
	Why             string     `json:"why"`
	Took            string     `json:"took"` // "ours", "theirs", or "" (left: strategy fail)
	Base            *MergeSide `json:"base"`
	Ours            *MergeSide `json:"ours"`
	Theirs          *MergeSide `json:"theirs"`
	Diff            string     `json:"diff,omitempty"` // unified, from ours to theirs, for two text files
	DiffTruncated   bool       `json:"diffTruncated,omitempty"`
	DiffUnavailable string     `json:"diffUnavailable,omitempty"`
}

// Merge is POST /v1/sandboxes/{fork}/merge's answer, and the body of its
// 409 when strategy "fail" met conflicts (then with error and code, and
// nothing written).
type Merge struct {
	Fork       string          `json:"fork"`
	Into       string          `json:"into"`
	Checkpoint string          `json:"checkpoint"` // the base: the checkpoint the fork was made from
	Strategy   string          `json:"strategy"`
	DryRun     bool            `json:"dryRun"`
	Undo       string          `json:"undo"` // the checkpoint taken first: restoring it undoes the merge
	Written    []string        `json:"written"`
	Removed    []string        `json:"removed"`
	Conflicts  []MergeConflict `json:"conflicts"`
	Skipped    []RestoreSkip   `json:"skipped"`
	Count      int             `json:"count"` // written + removed
	Error      string          `json:"error,omitempty"`
	Code       string          `json:"code,omitempty"`
}
