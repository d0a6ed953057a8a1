package fusefs

import "sync/atomic"

// The mirror's requests, counted by kind for the daemon's /metrics (go-fuse
// v2.12's RecordLatencies does nothing, so the counts are taken here, in
// the node's method for each). Reads and writes through a passthrough
// handle never reach the daemon and are not counted.

const (
	opLookup = iota
	opGetattr
	opOpen
	opOpendir
	opCreate
	opMknod
	opMkdir
	opSymlink
	opLink
	opRename
	opUnlink
	opRmdir
	opReadlink
	opSetattr
	opGetxattr
	opListxattr
	opSetxattr
	opRemovexattr
	opStatfs
	nOps
)

var opNames = [nOps]string{
	"lookup", "getattr", "open", "opendir", "create", "mknod", "mkdir", "symlink", "link", "rename", "unlink",
	"rmdir", "readlink", "setattr", "getxattr", "listxattr", "setxattr", "removexattr", "statfs",
}

type opCounts [nOps]atomic.Uint64

// count counts one request of kind op.
func (m *Mirror) count(op int) { m.ops[op].Add(1) }

// Ops reports how many requests of each kind (lookup, getattr, open,
// create, unlink, …) the mirror served since it was mounted.
func (m *Mirror) Ops() map[string]uint64 {
	out := make(map[string]uint64, nOps)
	for i := range m.ops {
		out[opNames[i]] = m.ops[i].Load()
	}
	return out
}
