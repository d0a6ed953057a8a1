package daemon

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint"
)

// A fork where no overlay can be is a copy: root/ is a plain directory
// holding the checkpoint's tree (checkpoint.CopyTree: each file a reflink
// of the store's object where the state's filesystem makes them, a sparse
// copy otherwise), with no upper/ or work/. That is so when the daemon is
// not root, when --fork-copy asks for it (Config.ForkCopy: a state
// filesystem an overlay refuses as its upper layer, or a test of this
// path as root), when the made tree's trusted.* xattrs are refused, and
// when the overlay's mount is (no overlayfs in the kernel, a refused
// layer: EPERM, ENODEV, EINVAL, EOPNOTSUPP). Its record says so (Copy,
// CopyWhy), and so do the answer and the log ("forked by copy: why"). It
// costs the tree's size in time, and without reflinks in space. It reads
// no made tree (none is made for it), but still pins its checkpoint: a
// merge takes that as its base. After a restart it is served as it is: no
// mount to check, but its root must be a directory and no mount. Its
// discard removes its directory; there is nothing to unmount.

// copyWhy says why a fork cannot be an overlay, before one is tried; ""
// when one may be.
func (h *Host) copyWhy() string {
	switch {
	case h.cfg.ForkCopy:
		return "asked for (--fork-copy)"
	case os.Geteuid() != 0:
		return "the daemon is not root (an overlay mount needs it)"
	}
	return ""
}

// lowerOrWhy makes the made tree of parent's checkpoint cp for the fork's
// overlay, or answers why the fork is a copy (and makes nothing).
func (h *Host) lowerOrWhy(ctx context.Context, parent *core.Sandbox, cp string) (checkpoint.Lower, string, error) {
	if why := h.copyWhy(); why != "" {
		return checkpoint.Lower{}, why, nil
	}
	lower, err := checkpoint.Materialize(ctx, parent, cp)
	if refused(err) {
		return checkpoint.Lower{}, "the checkpoint's tree for an overlay was refused: " + err.Error(), nil
	}
	return lower, "", err
}

// refused says whether err is the kernel refusing an overlay or its
// trusted.* xattrs: a missing privilege or filesystem, not a fault.
func refused(err error) bool {
	for _, e := range []error{unix.EPERM, unix.ENODEV, unix.EINVAL, unix.EOPNOTSUPP} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// makeRoot makes the fork's root/: its overlay, or a copy when rec says
// so or the overlay's mount is refused (rec then says so, and why).
func (h *Host) makeRoot(ctx context.Context, parent *core.Sandbox, rec *forkRecord) error {
	bfd, err := unix.Open(filepath.Join(h.forksDir(), rec.Name), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(bfd)
	if !rec.Copy {
		if err := h.overlayDirs(*rec); err != nil {
			return err
		}
		err := h.mountFork(*rec)
		if !refused(err) {
			return err
		}
		for _, d := range []string{"upper", "work", "root"} {
			if err := core.RemoveAllAt(ctx, bfd, d); err != nil {
				return err
			}
		}
		rec.Copy, rec.CopyWhy = true, "the overlay mount was refused: "+err.Error()
		rec.Lower, rec.Data = "", ""
	}
	if err := unix.Mkdirat(bfd, "root", 0o700); err != nil {
		return err
	}
	rfd, err := unix.Openat(bfd, "root", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(rfd)
	// On an error the fork's directory goes whole (Fork's undo): the
	// copy is made in place.
	st, err := checkpoint.CopyTree(ctx, parent, rec.Checkpoint, rfd)
	if err != nil {
		return err
	}
	h.log.Info("forked by copy: "+rec.CopyWhy, "sandbox", rec.Name, "from", rec.From, "checkpoint", rec.Checkpoint,
		"entries", st.Entries, "cloned", st.Cloned, "copied", st.Copied, "bytes", st.Bytes)
	return nil
}

// plainDir says why p is not a plain directory (a copy fork's root),
// nil when it is: not a symlink, not a mount.
func plainDir(p string) error {
	var st, up unix.Statx_t
	if err := unix.Statx(unix.AT_FDCWD, p, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE, &st); err != nil {
		return err
	}
	if err := unix.Statx(unix.AT_FDCWD, filepath.Dir(p), unix.AT_SYMLINK_NOFOLLOW, unix.STATX_TYPE, &up); err != nil {
		return err
	}
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFDIR:
		return fmt.Errorf("%s is not a directory", p)
	case st.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 && st.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0,
		st.Dev_major != up.Dev_major || st.Dev_minor != up.Dev_minor:
		return fmt.Errorf("%s is a mount", p)
	}
	return nil
}
