package safeat

import (
	"errors"
	"strconv"
	"strings"
	"sync/atomic"
	"unsafe"

	"github.com/pkg/xattr"
	"golang.org/x/sys/unix"
)

// ProcPath is the /proc/self/fd magic link of fd: the kernel resolves it
// to the inode fd holds, whatever names it has now.
func ProcPath(fd int) string { return "/proc/self/fd/" + strconv.Itoa(fd) }

// oneName refuses a name that is empty, "." or "..", or has a "/" (whose
// directories the kernel would resolve, following symlinks).
func oneName(name string) error {
	if name == "" || name == "." || name == ".." || strings.IndexByte(name, '/') >= 0 {
		return unix.EINVAL
	}
	return nil
}

// Chmod sets the mode of the file fd holds (an O_PATH descriptor too).
func Chmod(fd int, mode uint32) error {
	// fchmodat2 with AT_EMPTY_PATH takes any descriptor, O_PATH too, in one
	// syscall; fchmod refuses O_PATH (EBADF), and most descriptors changed
	// here are O_PATH (the mirror's setattr), so it is asked first.
	if err := fchmodat2(fd, "", mode, unix.AT_EMPTY_PATH); err != unix.ENOSYS {
		return err
	}
	err := unix.Fchmod(fd, mode)
	if err == unix.EBADF { // O_PATH, before fchmodat2 (Linux 6.6)
		err = unix.Chmod(ProcPath(fd), mode)
	}
	return err
}

// ChmodAt sets the mode of name in dirfd, never following a symlink there
// (EOPNOTSUPP for a symlink, whose mode means nothing on Linux).
func ChmodAt(dirfd int, name string, mode uint32) error {
	if err := oneName(name); err != nil {
		return err
	}
	if err := fchmodat2(dirfd, name, mode, unix.AT_SYMLINK_NOFOLLOW); err != unix.ENOSYS {
		return err
	}
	fd, err := unix.Openat(dirfd, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return err
	}
	if st.Mode&unix.S_IFMT == unix.S_IFLNK {
		return unix.EOPNOTSUPP
	}
	return unix.Chmod(ProcPath(fd), mode)
}

// Chown sets the owner and group (-1: unchanged) of the file fd holds.
func Chown(fd, uid, gid int) error {
	return unix.Fchownat(fd, "", uid, gid, unix.AT_EMPTY_PATH)
}

// LchownAt sets the owner and group of name in dirfd; a symlink is changed
// itself, never its target.
func LchownAt(dirfd int, name string, uid, gid int) error {
	if err := oneName(name); err != nil {
		return err
	}
	return unix.Fchownat(dirfd, name, uid, gid, unix.AT_SYMLINK_NOFOLLOW)
}

// Utimes sets the access and modification times (UTIME_OMIT, UTIME_NOW
// allowed) of the file fd holds.
func Utimes(fd int, ts []unix.Timespec) error {
	return unix.UtimesNanoAt(fd, "", ts, unix.AT_EMPTY_PATH)
}

// LutimesAt sets the times of name in dirfd; a symlink is changed itself.
func LutimesAt(dirfd int, name string, ts []unix.Timespec) error {
	if err := oneName(name); err != nil {
		return err
	}
	return unix.UtimesNanoAt(dirfd, name, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// Reopen opens the inode fd holds anew with flags (O_CLOEXEC added): how
// an O_PATH descriptor becomes one that can write or truncate.
func Reopen(fd, flags int) (int, error) {
	return unix.Open(ProcPath(fd), flags|unix.O_CLOEXEC, 0)
}

// XattrValue reads the whole value of the extended attribute name of the
// file fd holds (pkg/xattr grows its buffer until the value fits, also when
// the value grew since the last read).
func XattrValue(fd int, name string) ([]byte, error) {
	if len(name) > xattrNameMax {
		// The kernel's answer, before pkg/xattr could take it for a short
		// buffer and grow one until EOVERFLOW.
		return nil, unix.ERANGE
	}
	v, err := xattr.Get(ProcPath(fd), name)
	return v, xattrErrno(err)
}

// XattrNames lists the extended attribute names of the file fd holds. A
// list that grew between pkg/xattr's size probe and its read (ERANGE) is
// read again.
func XattrNames(fd int) ([]string, error) {
	for {
		names, err := xattr.List(ProcPath(fd))
		if err = xattrErrno(err); err != unix.ERANGE {
			return names, err
		}
	}
}

// xattrNameMax is XATTR_NAME_MAX: a longer name is ERANGE.
const xattrNameMax = 255

// xattrErrno is the errno inside pkg/xattr's error, which names the
// /proc/self/fd link: callers see errnos, as from every other call here.
func xattrErrno(err error) error {
	if xe, ok := errors.AsType[*xattr.Error](err); ok {
		return xe.Err
	}
	return err
}

// Getxattr reads the extended attribute name of the file fd holds into
// dest (its size when dest is empty): the kernel's own size probe, for a
// caller that passes the kernel's buffer on (the mirror).
func Getxattr(fd int, name string, dest []byte) (int, error) {
	return unix.Getxattr(ProcPath(fd), name, dest)
}

// Listxattr lists the extended attribute names of the file fd holds into
// dest, as Getxattr does.
func Listxattr(fd int, dest []byte) (int, error) {
	return unix.Listxattr(ProcPath(fd), dest)
}

// Setxattr sets the extended attribute name of the file fd holds.
func Setxattr(fd int, name string, data []byte, flags int) error {
	return unix.Setxattr(ProcPath(fd), name, data, flags)
}

// Removexattr removes the extended attribute name of the file fd holds.
func Removexattr(fd int, name string) error {
	return unix.Removexattr(ProcPath(fd), name)
}

// noFchmodat2 is set once the kernel said ENOSYS (before Linux 6.6).
var noFchmodat2 atomic.Bool

// fchmodat2 is the raw syscall, so that ENOSYS (no such syscall) and
// EOPNOTSUPP (a symlink, with AT_SYMLINK_NOFOLLOW) stay apart; x/sys's
// Fchmodat folds the first into the second.
func fchmodat2(dirfd int, name string, mode uint32, flags int) error {
	if noFchmodat2.Load() {
		return unix.ENOSYS
	}
	p, err := unix.BytePtrFromString(name)
	if err != nil {
		return err
	}
	_, _, e := unix.Syscall6(unix.SYS_FCHMODAT2, uintptr(dirfd), uintptr(unsafe.Pointer(p)), uintptr(mode), uintptr(flags), 0, 0)
	if e == unix.ENOSYS {
		noFchmodat2.Store(true)
	}
	if e != 0 {
		return e
	}
	return nil
}
