package cas

import (
	"golang.org/x/sys/unix"

	"sandfs/internal/safeat"
)

// An object's attributes. A checkpoint's made tree (package checkpoint's
// Materialize) is mostly files whose content the store holds: where an
// object already has a file's mode, owner and mtime, the tree takes the
// object itself as that file, one hard link, as `cp -al` makes. So a new
// object put from a file (Put) takes that file's owner, permission bits
// and mtime, what the checkpoint that stored it records of the file; one
// from elsewhere (PutNamed, PutBytes) is 0400. Nothing writes an object,
// and nothing writes a made tree (an overlay copies a file up before it
// changes it), so what a link shares never changes.
//
// Only a store of a daemon running as root keeps them: root reads an
// object whatever its mode, where an unprivileged daemon could not read
// back the object of a file of mode 0200; and only root makes trees. A
// set-id file's object is 0400 (its bits are kept or not by the
// sandbox's options of the day, and a store holds no set-id file).

// setAttrs gives the temp fd, about to become an object, the attributes
// of from (nil: 0400 only).
func (s *Store) setAttrs(fd int, from *unix.Stat_t) error {
	if from == nil || !s.keep || from.Mode&(unix.S_ISUID|unix.S_ISGID) != 0 {
		return unix.Fchmod(fd, 0o400)
	}
	if err := safeat.Chown(fd, int(from.Uid), int(from.Gid)); err != nil {
		return unix.Fchmod(fd, 0o400)
	}
	if err := unix.Fchmod(fd, from.Mode&0o1777); err != nil {
		return err
	}
	return safeat.Utimes(fd, []unix.Timespec{{Nsec: unix.UTIME_OMIT}, from.Mtim})
}

// LinkIf makes name in dirfd a hard link to object h (a made tree's
// file) when ok holds of the object's lstat; it never replaces name. It
// answers whether it linked, and why not when it tried and failed.
func (s *Store) LinkIf(h string, dirfd int, name string, ok func(*unix.Stat_t) bool) (bool, error) {
	if !ValidHash(h) {
		return false, unix.EINVAL
	}
	d, n := Split(h)
	obj := d + "/" + n
	var st unix.Stat_t
	if err := unix.Fstatat(s.fd, obj, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false, err
	}
	if !ok(&st) {
		return false, nil
	}
	if err := unix.Linkat(s.fd, obj, dirfd, name, 0); err != nil {
		return false, err
	}
	return true, nil
}
