// Package overlay mounts a kernel overlay filesystem whose layers are
// directories held by descriptors: the new mount API (fsopen, fsconfig
// with a descriptor per layer, fsmount, move_mount onto a directory held
// by descriptor), so no layer and no mountpoint is named by a path a
// writer could swap for a symlink between a check and the mount.
//
// Data-only layers (datadir+, Linux 6.7+) serve the content of metacopy
// files: a lower file that holds only metadata and the xattrs
// trusted.overlay.metacopy and trusted.overlay.redirect ("/ab/cdef…", a
// path in a data layer) reads its bytes from there. That is how a
// checkpoint's made tree shares its contents with the checkpoint store
// instead of copying them (core/checkpoint, materialize.go).
//
// Everything here needs CAP_SYS_ADMIN (mounting, trusted.* xattrs).
package overlay

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// The xattrs of a metacopy file.
const (
	XattrMetacopy = "trusted.overlay.metacopy"
	XattrRedirect = "trusted.overlay.redirect"
)

// Layers are an overlay's directories, each a descriptor (O_PATH will
// do). Lower is top first; Data are data-only layers; an Upper of -1
// makes a read-only overlay (Work is then unused).
type Layers struct {
	Lower []int
	Data  []int
	Upper int
	Work  int
}

// Mount mounts the overlay of l on the directory target holds.
func Mount(target int, l Layers) error {
	fs, err := unix.Fsopen("overlay", unix.FSOPEN_CLOEXEC)
	if err != nil {
		return fmt.Errorf("overlay: fsopen: %w", err)
	}
	defer unix.Close(fs)
	set := func(key string, fd int) error {
		if err := unix.FsconfigSetFd(fs, key, fd); err != nil {
			return fmt.Errorf("overlay: %s: %w", key, err)
		}
		return nil
	}
	if len(l.Data) > 0 {
		// A metacopy file of the lower reads from the data layers; its
		// redirect is followed only with both options on.
		for _, o := range []string{"metacopy", "redirect_dir"} {
			if err := unix.FsconfigSetString(fs, o, "on"); err != nil {
				return fmt.Errorf("overlay: %s=on: %w", o, err)
			}
		}
	}
	for _, fd := range l.Lower {
		if err := set("lowerdir+", fd); err != nil {
			return err
		}
	}
	for _, fd := range l.Data {
		if err := set("datadir+", fd); err != nil {
			return err
		}
	}
	attrs := 0
	if l.Upper >= 0 {
		if err := set("upperdir", l.Upper); err != nil {
			return err
		}
		if err := set("workdir", l.Work); err != nil {
			return err
		}
	} else {
		attrs = unix.MOUNT_ATTR_RDONLY
	}
	if err := unix.FsconfigCreate(fs); err != nil {
		return fmt.Errorf("overlay: create: %w", err)
	}
	m, err := unix.Fsmount(fs, unix.FSMOUNT_CLOEXEC, attrs)
	if err != nil {
		return fmt.Errorf("overlay: fsmount: %w", err)
	}
	defer unix.Close(m)
	if err := unix.MoveMount(m, "", target, "", unix.MOVE_MOUNT_F_EMPTY_PATH|unix.MOVE_MOUNT_T_EMPTY_PATH); err != nil {
		return fmt.Errorf("overlay: move_mount: %w", err)
	}
	return nil
}
