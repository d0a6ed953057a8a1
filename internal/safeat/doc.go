// Package safeat holds the only calls in sandfs that change a file's mode,
// owner, times or extended attributes, and the only ones that name a file
// by a path the kernel resolves (a /proc/self/fd magic link). Everything
// else in core and fusefs calls these instead of x/sys/unix; .ci/layering
// (through .ci/syscheck) fails the build on a direct call anywhere else.
//
// # The rule
//
// The daemon runs as root in directories that unprivileged users write. A
// name in such a directory can become a symlink between two syscalls, and
// a call that follows a final symlink then acts on whatever it points at:
// a root-owned file outside the sandbox root, say. Path resolution
// (openat2 RESOLVE_IN_ROOT, or the O_NOFOLLOW walk) is not enough when the
// last call is chmod(2) on a name. So:
//
//   - Changing the mode, owner or times of something an operation made or
//     opened goes through the descriptor it holds: Chmod, Chown, Utimes.
//     The descriptor names one inode; a symlink swapped in afterwards is
//     another name, not that inode.
//   - A call that must name (dirfd, name) never follows the name: ChmodAt,
//     LchownAt and LutimesAt pass AT_SYMLINK_NOFOLLOW, which fchownat and
//     utimensat honour on every kernel, and fchmodat2 (Linux 6.6) honours.
//     Plain fchmodat(2) has no flags argument and always follows: it is
//     never used on a name.
//   - Extended attributes have no fd form for an O_PATH descriptor before
//     Linux 6.13, so Getxattr, Listxattr, Setxattr and Removexattr take a
//     descriptor and go through its /proc/self/fd/N magic link, which the
//     kernel resolves to that very inode, never through a symlink stored
//     there. XattrValue and XattrNames read a whole value or the whole
//     list through github.com/pkg/xattr on that same link (its buffer
//     growth and list parsing); Getxattr and Listxattr stay raw for the
//     mirror, which hands the kernel's buffer and size probe through.
//     Where the kernel has getxattrat(2) and listxattrat(2) (6.13),
//     GetxattrAt and ListxattrAt read by (dirfd, name) with
//     AT_SYMLINK_NOFOLLOW in one syscall (xattrat.go).
//
// # Why each primitive cannot follow
//
//   - Chmod: fchmod(2) on an open descriptor; an O_PATH descriptor, which
//     fchmod refuses with EBADF, goes through fchmodat2(fd, "",
//     AT_EMPTY_PATH), else chmod of /proc/self/fd/N. All three act on the
//     descriptor's inode.
//   - ChmodAt: fchmodat2 with AT_SYMLINK_NOFOLLOW (EOPNOTSUPP on a
//     symlink); where fchmodat2 is missing, an O_PATH|O_NOFOLLOW open of
//     the name, a symlink refused with EOPNOTSUPP as glibc does, then Chmod
//     of that descriptor.
//   - Chown and Utimes: fchownat and utimensat with AT_EMPTY_PATH on the
//     descriptor.
//   - LchownAt and LutimesAt: AT_SYMLINK_NOFOLLOW, so a symlink itself is
//     changed, never its target.
//   - Reopen: open(2) of /proc/self/fd/N, a new open file description of
//     the inode an O_PATH descriptor holds (to truncate it, say).
//
// Only a final component is the concern here: a name with a "/" in it
// would follow symlinks in its directories, so the At calls refuse one
// (EINVAL).
package safeat
