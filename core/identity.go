package core

import (
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"sandfs/internal/safeat"
	"sandfs/internal/statedir"
)

// The sandbox's identity travels with its root. A sandbox that keeps
// state has an identity, 256 random bits made once in its state directory
// (statedir.IdentityFile), and its root directory is marked with it: the
// extended attribute MarkXattr. A root copied with its xattrs (rsync -X,
// cp -a, as root) or rebuilt from a checkpoint elsewhere and marked with
// the checkpoint's Identity (MarkRoot) is known as the sandbox's, though
// its device and inode are another directory's: the comparison at start
// (manifest.go) runs on it, and the daemon keeps its state for it.
//
// The mark is in the trusted namespace, which only CAP_SYS_ADMIN may read
// or write: a process in the sandbox can write anything in its root,
// user.* xattrs included, but cannot make or copy a mark. The API and the
// mirror do not show it and refuse to change it (reservedXattr), so
// neither can an API client, though the daemon acts as root. Where the
// kernel refuses it (the daemon is not root, the filesystem has no
// trusted xattrs) the device and inode alone decide, as without a mark,
// and the log says so once.

// MarkXattr is the root directory's extended attribute that holds the
// sandbox's identity.
const MarkXattr = "trusted.sandfs.id"

// RootMark is the identity the directory fd (any descriptor of it, O_PATH
// too) is marked with: "" when it has none, or a value that is not an
// identity. An error is the kernel's refusal to read it (EPERM without
// CAP_SYS_ADMIN, EOPNOTSUPP on a filesystem without trusted xattrs).
func RootMark(fd int) (string, error) {
	v, err := safeat.XattrValue(fd, MarkXattr)
	if err == unix.ENODATA {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if !statedir.IsIdentity(string(v)) {
		return "", nil
	}
	return string(v), nil
}

// MarkRoot marks the directory fd (any descriptor of it, O_PATH too) with
// the sandbox identity id: how a root rebuilt from a checkpoint on another
// host is made the sandbox's again (id is the checkpoint's Identity).
func MarkRoot(fd int, id string) error {
	if !statedir.IsIdentity(id) {
		return fmt.Errorf("marking a root: %q is not a sandbox identity: %w", id, unix.EINVAL)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return fmt.Errorf("marking a root: %w", unix.ENOTDIR)
	}
	return safeat.Setxattr(fd, MarkXattr, []byte(id), 0)
}

// reservedXattr reports whether name is the daemon's own attribute, which
// no client sees or changes.
func reservedXattr(name string) bool { return name == MarkXattr }

// Identity is the sandbox's identity ("" for a sandbox that keeps no
// state): a checkpoint records it, so a root rebuilt from one elsewhere
// can be marked with it (MarkRoot).
func (s *Sandbox) Identity() string { return s.id.id }

// identity is what openFD found and did with the sandbox's identity.
type identity struct {
	id    string // the state directory's; "" without one
	found string // the root's mark before this start ("" none)
	// marked is true once the root carries id; refused is the kernel's
	// error where it would not read or write the mark.
	marked  bool
	refused error
}

// openIdentity reads (making it at the first start) the identity in the
// state directory dir, reads the root's mark and marks the root with it.
// The root is marked before the kernel watch starts, so the mark is
// never seen as a change. Only the state directory's failure is an error.
func openIdentity(root int, dir string) (identity, error) {
	var out identity
	sfd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return out, &os.PathError{Op: "open state directory", Path: dir, Err: err}
	}
	defer unix.Close(sfd)
	if out.id, err = statedir.EnsureIdentity(sfd, dir+"/"+statedir.IdentityFile); err != nil {
		return out, err
	}
	if out.found, out.refused = RootMark(root); out.refused != nil {
		return out, nil
	}
	if out.found != out.id {
		if out.refused = MarkRoot(root, out.id); out.refused != nil {
			return out, nil
		}
	}
	out.marked = true
	return out, nil
}

// markRefusedLogged: the refusal is logged once per daemon, not per
// sandbox (one cause, often every root's).
var markRefusedLogged atomic.Bool

func (id identity) logRefused(log *slog.Logger, sandbox, root string) {
	if id.refused == nil || id.id == "" || !markRefusedLogged.CompareAndSwap(false, true) {
		return
	}
	log.Warn("the root cannot carry the sandbox's identity (trusted.* xattrs refused: the daemon is not root, or the filesystem has none); "+
		"a root copied or moved elsewhere is known by its device and inode alone", "sandbox", sandbox, "root", root, "err", id.refused)
}
