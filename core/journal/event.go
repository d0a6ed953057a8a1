package journal

import (
	"io/fs"
	"time"
)

// Type is what happened to a path.
type Type string

// The event types.
const (
	Create Type = "create"
	Write  Type = "write"
	Remove Type = "remove"
	Rename Type = "rename"
	Chmod  Type = "chmod"
)

// Origin is who made a change.
type Origin string

// The origins.
const (
	API      Origin = "api"
	Mirror   Origin = "fuse" // the FUSE mount; told as "fuse" on the wire
	External Origin = "external"
)

// Event is one change. It has no wire tags: each route family shapes it.
type Event struct {
	Seq     uint64
	Type    Type
	Path    string // API path
	OldPath string // on rename, when known
	IsDir   bool
	Size    int64
	Mtime   time.Time
	Inode   uint64
	Mode    fs.FileMode // the file's type and permissions after the change (0: unknown); kept, not on the wire
	Time    time.Time   // when the journal took it
	Origin  Origin
	Actor   string // api: who acts, as the client named it (X-Sandfs-Actor); "" when unnamed
	Pid     uint32 // fuse: the calling process (thread) where the kernel tells
	Uid     uint32 // fuse: the calling user
	Comm    string // fuse: the caller's command name, "" when it was gone
	Cgroup  string // fuse: the caller's cgroup v2 path, "" when unknown
	// FoundAtStart marks an external change the daemon did not see happen:
	// found at start by comparing the tree with the manifest the journal
	// last kept (the daemon was down when it was made).
	FoundAtStart bool
}
