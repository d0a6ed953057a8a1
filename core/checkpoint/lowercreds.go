package checkpoint

import (
	"golang.org/x/sys/unix"

	"sandfs/internal/safeat"
)

// A built file's owner and mode are what its create gave it when they are
// what the checkpoint recorded, and then the build does not set them
// again (two calls of the several a file costs). What a create gives is
// learned, not assumed: the group comes from a set-gid directory, the
// mode through the umask or a default ACL. So the build creates one probe
// file in the tree's root (every directory it makes inherits the root's
// set-gid bit and group) and reads what it got.

// createCreds is what a file created in the tree being built gets.
type createCreds struct {
	ok       bool   // learned: without it every owner and mode is set
	uid, gid uint32 // its owner
	umask    uint32 // the permission bits a create takes away
}

const probeName = ".sandfs-probe"

// probeCreds creates, reads and removes a probe file in rootfd.
func probeCreds(rootfd int) createCreds {
	fd, err := unix.Openat(rootfd, probeName, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o777)
	if err != nil {
		return createCreds{}
	}
	defer unix.Unlinkat(rootfd, probeName, 0)
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return createCreds{}
	}
	if _, err := unix.Fgetxattr(fd, "system.posix_acl_access", nil); err == nil {
		return createCreds{} // a default ACL, not the umask, made the mode
	}
	return createCreds{ok: true, uid: st.Uid, gid: st.Gid, umask: 0o777 &^ (st.Mode & 0o777)}
}

// createMode is the mode to create e's file with.
func (c createCreds) createMode(e cpEntry) uint32 {
	if !c.ok {
		return 0o600
	}
	return e.Perm & 0o777
}

// setAttrs sets the owner, mode and times of fd, a file just created with
// mode created, as setFileAttrs does, skipping what the create gave.
func (b *lowerBuild) setAttrs(fd int, e cpEntry, created uint32) error {
	c := b.creds
	if !c.ok {
		return setFileAttrs(b.s, fd, e)
	}
	chowned := e.Uid != c.uid || e.Gid != c.gid
	if chowned {
		_ = safeat.Chown(fd, int(e.Uid), int(e.Gid))
	}
	if mode := b.s.KeptMode(e.Perm); chowned || mode != created&^c.umask {
		if err := safeat.Chmod(fd, mode); err != nil {
			return err
		}
	}
	return safeat.Utimes(fd, times(e.Mtime))
}

// lchown sets a new symlink's owner unless it has it.
func (b *lowerBuild) lchown(dfd int, name string, e cpEntry) {
	if !b.creds.ok || e.Uid != b.creds.uid || e.Gid != b.creds.gid {
		_ = safeat.LchownAt(dfd, name, int(e.Uid), int(e.Gid))
	}
}
