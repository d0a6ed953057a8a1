package core

import (
	"golang.org/x/sys/unix"

	"sandfs/internal/safeat"
)

// Exact modes for the mirror. The kernel hands the mirror a mode with the
// caller's umask already applied (go-fuse does not ask for FUSE_DONT_MASK),
// and the mode is what the caller's file must get, setuid, setgid and
// sticky bits included: the kernel checked the caller (it drops a setgid
// the caller may not set). The daemon's own syscalls apply the daemon's
// umask on top (022 by default: 0666 became 0644, 0620 became 0600), and
// giving the file to the caller (chown) clears setuid and setgid. So what
// the mirror makes is set to the kernel's mode afterwards where it differs,
// through a descriptor (safeat.Chmod): a file made through a handle on that
// handle (Create), a node made by name (makeAt) on the inode found there.
//
// Why not umask(0) for the daemon: the umask is the process's, and REST
// creations (temporary files, mkdir -p, tar extraction), the state
// directory and the token file rely on it or on modes that assume it. A
// check after the create is local to the mirror and costs nothing where
// the umask cut nothing: the create's own stat (Create), one fstatat
// (makeAt).

// exactMode gives name in dirfd, just made by makeAt with the kernel's mode,
// exactly that mode. mkdir(2) takes no setuid or setgid bits (the kernel
// strips them before the mirror sees the mode), and a directory made in a
// setgid one inherits setgid, so a directory keeps the setgid it got. A
// symlink has no mode of its own. Something other than what was made found
// at name (swapped in by a process that writes the directory: another
// type, another owner than owner, a second link) is left alone.
func exactMode(dirfd int, name string, mode uint32, isDir bool, owner int) {
	var st unix.Stat_t
	if unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil || st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return
	}
	want := mode & 0o7777
	if isDir {
		want = mode&0o1777 | st.Mode&unix.S_ISGID
	}
	if st.Mode&0o7777 == want {
		return
	}
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	var got unix.Stat_t
	if unix.Fstat(fd, &got) != nil || got.Dev != st.Dev || got.Ino != st.Ino || !madeHere(&got, mode, isDir, owner) {
		return
	}
	safeat.Chmod(fd, want)
}

// madeHere: st is of the type makeAt made (from mode), has one link unless
// a directory, and is owned by owner (the caller it was given to, or the
// daemon).
func madeHere(st *unix.Stat_t, mode uint32, isDir bool, owner int) bool {
	typ := mode & unix.S_IFMT
	if isDir {
		typ = unix.S_IFDIR
	} else if typ == 0 {
		typ = unix.S_IFREG // mknod(2): a zero type is a regular file
	}
	return st.Mode&unix.S_IFMT == typ && (isDir || st.Nlink == 1) && int(st.Uid) == owner
}
