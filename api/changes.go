package api

// Changes since a point (api.md §5, "Changes since a point").

// Changes is the answer of GET /v1/sandboxes/{name}/changes: the net
// change of each path since a point.
type Changes struct {
	Since     ChangesSince `json:"since"`
	UntilSeq  uint64       `json:"untilSeq"`
	Lost      bool         `json:"lost"`
	Changes   []Change     `json:"changes"`
	Count     int          `json:"count"`
	Truncated bool         `json:"truncated"`
}

// ChangesSince is the point the changes are counted from.
type ChangesSince struct {
	Seq        uint64 `json:"seq"`
	Time       string `json:"time,omitempty"`
	Checkpoint string `json:"checkpoint,omitempty"` // since a checkpoint; since a fork, the parent's it was made from
	Fork       string `json:"fork,omitempty"`       // since a fork: the parent it was made from
}

// Change is one path's net change, with its first and last event.
type Change struct {
	Path            string      `json:"path"`
	Change          string      `json:"change"`
	RenamedFrom     string      `json:"renamedFrom,omitempty"`
	IsDir           bool        `json:"isDir"`
	Size            int64       `json:"size"`
	Events          int         `json:"events"`
	First           ChangeEvent `json:"first"`
	Last            ChangeEvent `json:"last"`
	Actors          []string    `json:"actors"`
	Diff            string      `json:"diff,omitempty"`
	DiffTruncated   bool        `json:"diffTruncated,omitempty"`
	Binary          bool        `json:"binary,omitempty"`
	DiffUnavailable string      `json:"diffUnavailable,omitempty"`
}

// ChangeEvent is one event of a path's change.
type ChangeEvent struct {
	Seq    uint64 `json:"seq"`
	Time   string `json:"time"`
	Type   string `json:"type"`
	Origin string `json:"origin"`
	Actor  string `json:"actor,omitempty"`
	Pid    uint32 `json:"pid,omitempty"`
	Comm   string `json:"comm,omitempty"`
}
