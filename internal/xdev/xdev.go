// Package xdev holds the stat and the opens of the daemon's own walks.
//
// The rule: the daemon's own walks (a listing's stats, a walk, grep, tar, a
// checkpoint, the quota's scan, the watch's, the start-up sweep) never
// enter another mount inside a root, as find -xdev. A mount there may be
// served by a process that never answers (a FUSE mount made by the
// sandbox's user, or the daemon's own mirror, which a walk would then walk
// inside itself), and one call stuck in the kernel on it holds a thread
// for good, past SIGTERM. So a walk stats an entry without asking whatever
// serves it (statx AT_STATX_DONT_SYNC: the kernel answers a FUSE mount's
// root from what it holds, never from its server; on a root of a network
// filesystem that is the attribute cache's answer, as ls's), reports a
// mount point as the directory it looks like, and does not open it: a
// subdirectory is opened with RESOLVE_NO_XDEV, so the kernel itself
// refuses to cross, with no window for a mount made in between. A path a
// caller names under such a mount is the caller's to ask.
package xdev

import (
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// LstatAt stats name in dirfd, not following a symlink and never asking a
// mount's server, and reports whether it is the root of a mount.
func LstatAt(dirfd int, name string, st *unix.Stat_t) (mount bool, err error) {
	var x unix.Statx_t
	err = unix.Statx(dirfd, name, unix.AT_SYMLINK_NOFOLLOW|unix.AT_STATX_DONT_SYNC|unix.AT_NO_AUTOMOUNT,
		unix.STATX_BASIC_STATS, &x)
	if err != nil {
		return false, err
	}
	*st = statFromStatx(&x)
	if x.Attributes_mask&unix.STATX_ATTR_MOUNT_ROOT != 0 {
		return x.Attributes&unix.STATX_ATTR_MOUNT_ROOT != 0, nil
	}
	// A kernel before 5.8 does not say: another device is another mount.
	var parent unix.Stat_t
	return unix.Fstat(dirfd, &parent) == nil && parent.Dev != st.Dev, nil
}

// statFromStatx is the stat(2) of what statx(2) returned.
func statFromStatx(x *unix.Statx_t) unix.Stat_t {
	ts := func(t unix.StatxTimestamp) unix.Timespec { return unix.Timespec{Sec: t.Sec, Nsec: int64(t.Nsec)} }
	return unix.Stat_t{
		Dev:     unix.Mkdev(x.Dev_major, x.Dev_minor),
		Ino:     x.Ino,
		Nlink:   uint64(x.Nlink),
		Mode:    uint32(x.Mode),
		Uid:     x.Uid,
		Gid:     x.Gid,
		Rdev:    unix.Mkdev(x.Rdev_major, x.Rdev_minor),
		Size:    int64(x.Size),
		Blksize: int64(x.Blksize),
		Blocks:  int64(x.Blocks),
		Atim:    ts(x.Atime),
		Mtim:    ts(x.Mtime),
		Ctim:    ts(x.Ctime),
	}
}

// noOpenat2 is set once openat2(2) was found missing (kernels before 5.6).
var noOpenat2 atomic.Bool

// OpenSubdir opens the directory name in dirfd for reading, for a walk:
// never through a symlink, never into another mount (EXDEV).
func OpenSubdir(dirfd int, name string) (int, error) {
	const flags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC
	if !noOpenat2.Load() {
		fd, err := unix.Openat2(dirfd, name, &unix.OpenHow{Flags: flags,
			Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_XDEV})
		if err != unix.ENOSYS {
			return fd, err
		}
		noOpenat2.Store(true)
	}
	var st unix.Stat_t
	if mount, err := LstatAt(dirfd, name, &st); err != nil {
		return -1, err
	} else if mount {
		return -1, unix.EXDEV
	}
	return unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
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
