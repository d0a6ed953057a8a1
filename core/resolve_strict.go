package core

import (
	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/internal/xdev"
)

// StrictParent resolves the directory holding ap beneath the root with no
// symlink followed on the way (ELOOP where one is) and returns an O_PATH
// fd on it and the last name ("." for the root itself).
func (r *Root) StrictParent(ap string) (int, string, error) {
	if ap == "/" {
		fd, err := unix.Openat(r.fd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return fd, ".", err
	}
	dir, name := apipath.Split(ap)
	fd, err := r.strictDir(dir)
	return fd, name, err
}

// strictDir opens the directory ap (O_PATH) beneath the root following no
// symlink at all.
func (r *Root) strictDir(ap string) (int, error) {
	return xdev.OpenBelow(r.fd, rel(ap))
}
