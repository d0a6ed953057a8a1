// Package core is the filesystem of sandfs: a sandbox root held open as a
// directory file descriptor, every client path resolved beneath it, and the
// operations every route family and the FUSE mirror share.
//
// # Path model
//
// A client names files by API paths. "/" is the sandbox root; a relative path
// is taken against the sandbox's working directory. [Sandbox.Clean] turns any
// client string into a canonical absolute API path lexically ("/a/../b" is
// "/b", ".." at the root stays at the root). A NUL byte or an empty path is
// EINVAL. API paths are the only paths that ever leave core: errors and
// results never carry the host path of the root.
//
// # Confinement
//
// Nothing in core joins the root's host path with a client path and hands the
// result to a path-based syscall: that is a race (a directory swapped for a
// symlink between the check and the use escapes the root). Every lookup starts
// at the root fd and goes through openat2(2) with
// RESOLVE_IN_ROOT|RESOLVE_NO_MAGICLINKS, so the kernel itself treats the root
// as "/" for "..", absolute symlinks and races. Where openat2 is missing
// (kernels before 5.6, seccomp filters) a user-space walk does the same thing
// one component at a time with O_NOFOLLOW, reading symlinks itself and keeping
// a stack of directory fds for "..", with the same 40-link ELOOP bound.
//
// Operations on a name (unlink, rename, mkdir, create) resolve the parent
// directory that way and then act on the last component with the *at
// syscalls, so the last component is never followed unless the operation
// says so.
//
// # Error handling
//
// Every error is an *fs.PathError whose Path is the API path and whose Err is
// a unix.Errno, so callers use errors.Is(err, fs.ErrNotExist) or errors.As
// with a unix.Errno and never match strings. Limits that are hit return
// EFBIG (too large) wrapped the same way.
//
// # Writes
//
// A write that replaces a file is atomic: the bytes stream into a temp file
// named ".sandfs-<random>.part" in the target's directory, which is fsynced
// and renamed over the target. A failed or abandoned write removes the temp
// file and leaves the old content whole. Nothing holds a whole file in memory.
//
// # Tar extraction
//
// [Sandbox.ExtractTar] refuses a hostile archive whole: entries are extracted
// into a staging directory beside the destination, each one checked (no
// absolute names, no "..", no device nodes or FIFOs, no symlink or hard link
// whose target leaves the destination, no entry written through a symlink),
// and only a fully valid archive is merged into the destination.
package core
