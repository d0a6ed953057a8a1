package core

import "sync/atomic"

// The mirror's calls into core, counted by operation for the daemon's
// /metrics. go-fuse v2.12's RecordLatencies does nothing, so the counts are
// taken here, at the one door every mirror operation that reaches the
// daemon goes through. Reads and writes through a passthrough handle never
// reach the daemon and are not counted.

const (
	fopGetattr = iota
	fopOpen
	fopCreate
	fopMknod
	fopMkdir
	fopSymlink
	fopLink
	fopRename
	fopUnlink
	fopRmdir
	fopReadlink
	fopSetattr
	fopGetxattr
	fopListxattr
	fopSetxattr
	fopRemovexattr
	fopStatfs
	nFuseOps
)

var fuseOpNames = [nFuseOps]string{
	"getattr", "open", "create", "mknod", "mkdir", "symlink", "link", "rename", "unlink", "rmdir",
	"readlink", "setattr", "getxattr", "listxattr", "setxattr", "removexattr", "statfs",
}

type fuseOpCounts [nFuseOps]atomic.Uint64

// FUSEOps reports how many times the mirror called each operation of core
// (getattr, open, create, unlink, …) since the sandbox was opened.
func (s *Sandbox) FUSEOps() map[string]uint64 {
	out := make(map[string]uint64, nFuseOps)
	for i := range s.fuseOps {
		out[fuseOpNames[i]] = s.fuseOps[i].Load()
	}
	return out
}
