package core

import (
	"sandfs/core/apipath"
	"strings"

	"golang.org/x/sys/unix"
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
	return OpenBelow(r.fd, rel(ap))
}

// OpenBelow opens the directory relPath below dirfd (O_PATH), following no
// symlink (ELOOP where one is on the way) and no ".." (EINVAL): the one
// strict resolution, of the root (strictDir) and of a tar's stage. With
// openat2 it is one call; without, one openat per component.
func OpenBelow(dirfd int, relPath string) (int, error) {
	const flags = unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	parts := strings.Split(relPath, "/")
	for _, c := range parts {
		if c == ".." {
			return -1, unix.EINVAL
		}
	}
	if !noOpenat2.Load() {
		how := unix.OpenHow{Flags: flags, Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		p := strings.Trim(relPath, "/")
		if p == "" {
			p = "."
		}
		for tries := 0; ; tries++ {
			fd, err := unix.Openat2(dirfd, p, &how)
			if err == unix.EAGAIN && tries < 64 {
				continue
			}
			if err != unix.ENOSYS {
				return fd, err
			}
			noOpenat2.Store(true)
			break
		}
	}
	fd, err := unix.Openat(dirfd, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range parts {
		if c == "" || c == "." {
			continue
		}
		next, err := unix.Openat(fd, c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		unix.Close(fd)
		if err != nil {
			return -1, err
		}
		fd = next
	}
	return fd, nil
}
