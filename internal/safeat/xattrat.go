package safeat

import (
	"runtime"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The *xattrat(2) calls (Linux 6.13) name a file as (dirfd, name) and take
// AT_SYMLINK_NOFOLLOW: one syscall, where the /proc/self/fd form costs an
// O_PATH open, a walk of the magic link and a close. The mirror reads
// xattrs often (the kernel asks security.capability before every write it
// serves and every O_TRUNC or chown), so its reads go this way where the
// kernel has the calls, and the old way where it has not.

// noXattrat is set once the kernel said ENOSYS: the calls are missing.
var noXattrat atomic.Bool

// xattrArgs is struct xattr_args.
type xattrArgs struct {
	value uint64
	size  uint32
	flags uint32
}

// GetxattrAt reads the extended attribute attr of name in dirfd ("" for
// dirfd itself) into dest (its size when dest is empty), never following
// name. ok is false where the kernel lacks getxattrat(2): the caller then
// goes through a descriptor (Getxattr).
func GetxattrAt(dirfd int, name, attr string, dest []byte) (n int, ok bool, err error) {
	if noXattrat.Load() {
		return 0, false, nil
	}
	path, flags, err := atName(name)
	if err != nil {
		return 0, true, err
	}
	a, err := unix.BytePtrFromString(attr)
	if err != nil {
		return 0, true, err
	}
	args := xattrArgs{size: uint32(len(dest))}
	if len(dest) > 0 {
		args.value = uint64(uintptr(unsafe.Pointer(&dest[0])))
	}
	r, _, errno := unix.Syscall6(unix.SYS_GETXATTRAT, uintptr(dirfd), uintptr(unsafe.Pointer(path)), uintptr(flags),
		uintptr(unsafe.Pointer(a)), uintptr(unsafe.Pointer(&args)), unsafe.Sizeof(args))
	runtime.KeepAlive(dest) // args holds its address as a number
	return result(r, errno)
}

// ListxattrAt lists the extended attribute names of name in dirfd into
// dest, as GetxattrAt reads one.
func ListxattrAt(dirfd int, name string, dest []byte) (n int, ok bool, err error) {
	if noXattrat.Load() {
		return 0, false, nil
	}
	path, flags, err := atName(name)
	if err != nil {
		return 0, true, err
	}
	var p unsafe.Pointer
	if len(dest) > 0 {
		p = unsafe.Pointer(&dest[0])
	}
	r, _, errno := unix.Syscall6(unix.SYS_LISTXATTRAT, uintptr(dirfd), uintptr(unsafe.Pointer(path)), uintptr(flags),
		uintptr(p), uintptr(len(dest)), 0)
	return result(r, errno)
}

// atName is name as the at-calls take it: one name, not followed, or ""
// for the directory itself, named "." (AT_EMPTY_PATH refuses an O_PATH
// descriptor, and the directories' descriptors may be O_PATH).
func atName(name string) (*byte, int, error) {
	if name == "" {
		name = "."
	} else if err := oneName(name); err != nil {
		return nil, 0, err
	}
	p, err := unix.BytePtrFromString(name)
	return p, unix.AT_SYMLINK_NOFOLLOW, err
}

func result(r uintptr, errno unix.Errno) (int, bool, error) {
	switch errno {
	case 0:
		return int(r), true, nil
	case unix.ENOSYS:
		noXattrat.Store(true)
		return 0, false, nil
	}
	return 0, true, errno
}
