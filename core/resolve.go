package core

import (
	"sandfs/core/apipath"
	"strings"

	"golang.org/x/sys/unix"
)

// maxSymlinks bounds the symlinks one resolution follows, as the kernel does.
const maxSymlinks = 40

// OpenBeneath opens a clean API path beneath the root with the given open(2)
// flags. The last component is followed when it is a symlink unless flags
// has O_NOFOLLOW; every symlink is read as if the root were "/".
func (r *Root) OpenBeneath(apiPath string, flags int, mode uint32) (int, error) {
	return r.openResolve(apiPath, flags, mode, 0)
}

// openResolve is OpenBeneath with more openat2 resolve flags (xdev: no
// crossing into another mount, told as EXDEV).
func (r *Root) openResolve(apiPath string, flags int, mode uint32, xdev uint64) (int, error) {
	flags |= unix.O_CLOEXEC
	if !r.openat2 {
		return r.walk(rel(apiPath), flags, mode)
	}
	how := unix.OpenHow{
		Flags:   uint64(flags),
		Mode:    uint64(mode),
		Resolve: unix.RESOLVE_IN_ROOT | unix.RESOLVE_NO_MAGICLINKS | xdev,
	}
	for tries := 0; ; tries++ {
		fd, err := unix.Openat2(r.fd, rel(apiPath), &how)
		// EAGAIN: a rename raced a ".." during resolution; the kernel asks
		// for a retry rather than risk an escape.
		if err == unix.EAGAIN && tries < 64 {
			continue
		}
		if err == unix.EXDEV && xdev == 0 {
			// The kernel saw a path trying to leave the root mid-race.
			err = unix.EACCES
		}
		return fd, err
	}
}

// openPath resolves a clean API path to an O_PATH fd (follow: through a
// final symlink, within the root; else the symlink itself).
func (r *Root) openPath(ap string, follow bool) (int, error) {
	flags := unix.O_PATH
	if !follow {
		flags |= unix.O_NOFOLLOW
	}
	return r.OpenBeneath(ap, flags, 0)
}

// OpenDir resolves a clean API path to an O_PATH directory fd.
func (r *Root) OpenDir(apiPath string) (int, error) {
	return r.OpenBeneath(apiPath, unix.O_PATH|unix.O_DIRECTORY, 0)
}

// parent resolves the directory holding a clean API path and returns an
// O_PATH fd on it and the last component, for the *at syscalls. The root
// itself has no parent: EBUSY would be the kernel's word, EINVAL is ours.
func (r *Root) parent(apiPath string) (dirfd int, name string, err error) {
	dir, name := apipath.Split(apiPath)
	if name == "" {
		return -1, "", unix.EINVAL
	}
	fd, err := r.OpenDir(dir)
	return fd, name, err
}

// walk is the resolution of openat2(RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS)
// done in user space, one component at a time, for kernels without openat2.
// Each step opens one name relative to a directory fd it holds, with
// O_NOFOLLOW, so a concurrent swap of a directory for a symlink is seen as a
// symlink and read as if the root were "/": it can redirect the walk only
// within the root. ".." pops the fd stack, and at the root stays there.
func (r *Root) walk(relPath string, flags int, mode uint32) (int, error) {
	stack := []int{r.fd}
	defer func() {
		for _, fd := range stack[1:] {
			unix.Close(fd)
		}
	}()
	top := func() int { return stack[len(stack)-1] }
	todo := strings.Split(relPath, "/")
	links := 0
	follow := flags&unix.O_NOFOLLOW == 0
	for len(todo) > 0 {
		c := todo[0]
		todo = todo[1:]
		last := len(todo) == 0
		switch c {
		case "", ".":
			if last {
				return unix.Openat(top(), ".", flags, mode)
			}
			continue
		case "..":
			if len(stack) > 1 {
				unix.Close(top())
				stack = stack[:len(stack)-1]
			}
			if last {
				return unix.Openat(top(), ".", flags, mode)
			}
			continue
		}
		var st unix.Stat_t
		err := unix.Fstatat(top(), c, &st, unix.AT_SYMLINK_NOFOLLOW)
		if err == nil && st.Mode&unix.S_IFMT == unix.S_IFLNK && (!last || follow) {
			links++
			if links > maxSymlinks {
				return -1, unix.ELOOP
			}
			target, err := Readlinkat(top(), c)
			if err != nil {
				return -1, err
			}
			if strings.HasPrefix(target, "/") {
				for _, fd := range stack[1:] {
					unix.Close(fd)
				}
				stack = stack[:1]
			}
			todo = append(strings.Split(target, "/"), todo...)
			continue
		}
		if err != nil && (err != unix.ENOENT || !last) {
			return -1, err
		}
		if last {
			return unix.Openat(top(), c, flags|unix.O_NOFOLLOW, mode)
		}
		fd, err := unix.Openat(top(), c, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return -1, err
		}
		stack = append(stack, fd)
	}
	return unix.Openat(top(), ".", flags, mode)
}

// Readlinkat reads a symlink's target whatever its length.
func Readlinkat(dirfd int, name string) (string, error) {
	for size := 256; ; size *= 2 {
		buf := make([]byte, size)
		n, err := unix.Readlinkat(dirfd, name, buf)
		if err != nil {
			return "", err
		}
		if n < size {
			return string(buf[:n]), nil
		}
	}
}
