package core

import (
	"strings"

	"golang.org/x/sys/unix"
)

// strictParent resolves the directory holding ap beneath the root with no
// symlink followed on the way (ELOOP where one is) and returns an O_PATH
// fd on it and the last name ("." for the root itself).
func (s *Sandbox) strictParent(ap string) (int, string, error) {
	if ap == "/" {
		fd, err := unix.Openat(s.root, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return fd, ".", err
	}
	dir, name := dirAndName(ap)
	fd, err := s.strictDir(dir)
	return fd, name, err
}

// strictDir opens the directory ap (O_PATH) beneath the root following no
// symlink at all.
func (s *Sandbox) strictDir(ap string) (int, error) {
	flags := unix.O_PATH | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if s.openat2 {
		how := unix.OpenHow{Flags: uint64(flags), Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS}
		for tries := 0; ; tries++ {
			fd, err := unix.Openat2(s.root, rel(ap), &how)
			if err == unix.EAGAIN && tries < 64 {
				continue
			}
			return fd, err
		}
	}
	fd, err := unix.Openat(s.root, ".", unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, err
	}
	for _, c := range strings.Split(rel(ap), "/") {
		if c == "" || c == "." {
			continue
		}
		if c == ".." {
			unix.Close(fd)
			return -1, unix.EINVAL
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
