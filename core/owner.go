package core

import (
	"context"

	"golang.org/x/sys/unix"

	"sandfs/internal/safeat"
)

// Owner is the account that owns the files and directories an operation
// creates (the AIO "user" of api.md §4). It travels in the context, like the
// Actor, so every creating operation (WriteFile, WriteInPlace, Mkdir and its
// parents, Copy, uploads and extractions built on them) honours it without
// an option of its own. Files that already exist keep their owner: the owner
// decides only who owns what the call creates.
//
// Core never checks whether the daemon may give files away: the boundary
// refuses a non-root daemon before calling core. If a chown fails anyway,
// the operation fails and removes what it created, so nothing is ever left
// under the wrong owner.
type Owner struct {
	Uid, Gid int
}

type ownerKey struct{}

// WithOwner stamps ctx with the owner of what the operations under it create.
func WithOwner(ctx context.Context, o Owner) context.Context {
	return context.WithValue(ctx, ownerKey{}, o)
}

// OwnerOf is the owner stamped on ctx, and whether there is one.
func OwnerOf(ctx context.Context) (Owner, bool) {
	o, ok := ctx.Value(ownerKey{}).(Owner)
	return o, ok
}

// chownNewAt gives name in dirfd (just created by this operation) to the
// owner in ctx, if any, without following a symlink.
func chownNewAt(ctx context.Context, dirfd int, name string) error {
	o, ok := OwnerOf(ctx)
	if !ok {
		return nil
	}
	return safeat.LchownAt(dirfd, name, o.Uid, o.Gid)
}

// chownNewFd gives the file fd (just created by this operation; an O_PATH
// descriptor too) to the owner in ctx, if any.
func chownNewFd(ctx context.Context, fd int) error {
	o, ok := OwnerOf(ctx)
	if !ok {
		return nil
	}
	return safeat.Chown(fd, o.Uid, o.Gid)
}

// The daemon's effective ids, which it never changes: asked once, not at
// every create.
var daemonUid, daemonGid = unix.Geteuid(), unix.Getegid()

// callerOwner is the chown that gives what a FUSE caller (uid, gid; -1 when
// the mirror does not set owners) just made in dirfd to it, as a local
// filesystem would have made it (inode_init_owner): the caller's uid, and
// its gid unless the directory is setgid (setgidDir), where the new entry
// keeps the directory's group (-1). ok is false when the entry, made by the
// daemon, already has that owner, so the chown (and the IN_ATTRIB it would
// cost the kernel watch) is skipped.
func callerOwner(dirfd, uid, gid int) (newUid, newGid int, setgidDir, ok bool) {
	if uid == daemonUid {
		uid = -1
	}
	if gid == daemonGid {
		gid = -1
	}
	if uid < 0 && gid < 0 {
		return -1, -1, false, false // the daemon's own: no chown, no stat
	}
	var st unix.Stat_t
	if unix.Fstat(dirfd, &st) == nil && st.Mode&unix.S_ISGID != 0 {
		gid, setgidDir = -1, true
	}
	return uid, gid, setgidDir, uid >= 0 || gid >= 0
}
