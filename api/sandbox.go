package api

// The live registry (api.md "The live registry"): /v1/sandboxes.

// SandboxList is the answer of GET /v1/sandboxes. DefaultExcludes are the
// names a watcher, a grep or a checkpoint skips unless told otherwise, the
// same for every sandbox: the console's feed hides them unless asked, and
// reads them here so that it never keeps a copy.
type SandboxList struct {
	Sandboxes       []Sandbox `json:"sandboxes"`
	Count           int       `json:"count"`
	DefaultExcludes []string  `json:"defaultExcludes"`
}

// Sandbox is one sandbox of the list. From and Checkpoint are set on a
// fork only, so that a client (the console's picker) can show forks under
// their parent without asking each sandbox.
type Sandbox struct {
	Name       string `json:"name"`
	Usage      Sizes  `json:"usage"`                // what it holds now
	Quota      Sizes  `json:"quota"`                // its bound, 0 = none
	From       string `json:"from,omitempty"`       // a fork: its parent
	Checkpoint string `json:"checkpoint,omitempty"` // a fork: the parent's checkpoint it starts from
}

// Sizes is a quota or a usage: bytes (of regular files) and entries
// (every name but the root).
type Sizes struct {
	Bytes   int64 `json:"bytes"`
	Entries int64 `json:"entries"`
}

// SandboxCreated is the answer of POST /v1/sandboxes: the sandbox's own
// token, which opens that sandbox only, told once.
type SandboxCreated struct {
	Name       string `json:"name"`
	Token      string `json:"token"`
	Quota      Sizes  `json:"quota"`
	From       string `json:"from,omitempty"`       // a fork: its parent
	Checkpoint string `json:"checkpoint,omitempty"` // a fork: the parent's checkpoint it starts from
	Copy       bool   `json:"copy,omitempty"`       // a fork made by copying the checkpoint's tree, not as an overlay
	CopyWhy    string `json:"copyWhy,omitempty"`    // why it is a copy
}

// SandboxQuota is the answer of PATCH /v1/sandboxes/{name}.
type SandboxQuota struct {
	Name  string `json:"name"`
	Quota Sizes  `json:"quota"`
	Usage Sizes  `json:"usage"`
}

// SandboxRemoved is the answer of DELETE /v1/sandboxes/{name}.
type SandboxRemoved struct {
	Name    string `json:"name"`
	Removed bool   `json:"removed"`
}
