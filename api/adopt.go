package api

// SandboxAdopted is the answer of POST /v1/sandboxes {name, adopt: true}:
// the sandbox taken up on this host from the fleet's checkpoint, its own
// token (the one it had: the fleet keeps it), and the changes the fleet
// heard of after that checkpoint, which the tree does not hold: what an
// agent must do again.
type SandboxAdopted struct {
	Name       string  `json:"name"`
	Token      string  `json:"token"`
	Quota      Sizes   `json:"quota"`
	Checkpoint string  `json:"checkpoint"` // the fleet's checkpoint the tree is
	Seq        uint64  `json:"seq"`        // the checkpoint's seq: the journal numbers on above it (and above every lost change)
	From       string  `json:"from"`       // the host that sent the checkpoint
	Fetched    Fetched `json:"fetched"`
	Lost       []Lost  `json:"lost"`                    // by seq
	Truncated  bool    `json:"lostTruncated,omitempty"` // more were lost than listed
}

// Fetched is what came from the fleet: the objects the local store lacked.
type Fetched struct {
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

// Lost is one change the fleet's stream heard of after the checkpoint.
type Lost struct {
	Seq     uint64 `json:"seq"`
	Type    string `json:"type"`
	Path    string `json:"path"`
	OldPath string `json:"oldPath,omitempty"` // a rename's source
	Host    string `json:"host"`
	Time    string `json:"time"` // RFC 3339, the host's clock
}
