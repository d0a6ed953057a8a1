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
// # Changing what an operation made
//
// Resolution confines a path, but the last syscall of an operation can
// still follow a symlink: whoever owns a directory in the root (the
// attacker of issue 16 owns a destination's parent) may swap a name the
// daemon just made, its .sandfs-*.part temp directory say, for a symlink to
// a host file between two calls. So a mode, owner, time or xattr change
// never goes through a name that can follow: it goes through the descriptor
// the operation holds (a directory it made is opened at once, O_NOFOLLOW,
// and refused unless the daemon owns it: mkdirOpen), or through a name with
// AT_SYMLINK_NOFOLLOW. The primitives live in sandfs/internal/safeat (its
// doc.go says why each cannot follow); .ci/syscheck, run by make layering,
// fails a direct call of fchmodat, fchownat, utimensat, the xattr calls, or
// os.Chmod and friends anywhere else, and an openat or fstatat of a name
// without O_NOFOLLOW or AT_SYMLINK_NOFOLLOW.
//
// # Setuid and setgid
//
// The daemon is root acting for callers who are not. Unless the Sandbox is
// opened with Options.AllowSetid (serve --allow-setid), no API operation
// makes a setuid or setgid non-directory: asked for (Chmod, a write's
// Mode) it is refused with [ErrSetid] (EPERM), inherited (a file replaced or
// written in place, PreserveAttrs) the bits are dropped, and tar entries
// never carry them. Copy drops them always, as GNU cp does. setid.go says
// why and what stays allowed.
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
// Bytes live only in regular files. A read, write, upload or copy of a
// FIFO, unix socket or device is EINVAL and leaves the node as it was: a
// replacing write does not swap it for a file, and no open blocks (opens
// are O_NONBLOCK, so a FIFO with no peer answers at once, and the ENXIO or
// ENODEV open(2) gives for a socket, a reader-less FIFO or a driverless
// device is reported as that EINVAL).
//
// Two writes differ on purpose. [Sandbox.WriteInPlace] (the AIO plain write)
// writes through the file itself: the destination keeps its inode, mode and
// owner and no temp file is made. [Sandbox.Copy] builds the copy under a
// temp name beside the destination and renames it in (RENAME_NOREPLACE
// unless overwriting), so a copy appears whole or not at all.
//
// # Ownership
//
// [WithOwner] stamps an [Owner] on the context; every operation that creates
// a file or directory under it (WriteFile, WriteInPlace, Mkdir with its
// parents, Copy) chowns what it creates to that account before the call
// returns, and fails, removing what it made, when it cannot. Existing files
// keep their owner.
//
// # Walks
//
// [Sandbox.Walk] is the one bounded tree walk of the listing and name-search
// routes: depth first, names in byte order, each directory opened by fd from
// its parent with O_NOFOLLOW, symlinks reported (with whether they point at
// a directory) and never descended; the caller stops it with fs.SkipAll at
// its limit. [Glob] matches slash-separated relative paths with "**".
// Walk, List and Grep leave out a name that is not valid UTF-8 (and do not
// descend such a directory), counting it in the [SkippedNames] of the
// context: no boundary could report it without aliasing another file
// (names.go). The path functions themselves stay byte-exact for the
// mirror.
//
// # The change journal
//
// Every change is one event in the sandbox's journal (package journal):
// core's own operations append theirs, with the actor in ctx (origin api or
// fuse); the kernel watch (notify.go, kwatch.go) tells the rest, origin
// external. It watches every directory of the root (.git and node_modules
// too: notify.go says why inotify, with the figures), and what it hears
// is what the mirror may let the kernel cache (coverage.go). Each operation claims its paths in the ledger (ledger.go)
// before its first syscall, so the inotify echoes of its own changes are
// dropped, not told again.
//
// A claim absorbs only what came after it: opening it reads the inotify
// queue and handles what was there (one read(2), EAGAIN when nothing was),
// and only then files the claim, all under the notifier's lock. An outside
// change made just before an operation of the same path is therefore told,
// once, as external, and before the operation's own event: the
// notifier's events go to an outbox (outbox.go) that a REST operation
// empties into the journal before its own event, and that a mirror
// operation's event joins when anything waits in it (a FUSE handler must
// not append another's event: the mirror's journal hook would invalidate
// kernel caches from inside a request). The journal's order is the order
// the changes were made in, for each path and across the daemon's
// operations and the outside changes before them.
//
// # Client patterns
//
// Every regular expression and glob a client sends is compiled in
// pattern.go, under one set of bounds: a regex's program is at most
// [MaxPatternInsts] instructions, one search scans at most
// [MaxInputFor] bytes of a file (the product is [PatternWork]), a glob is at
// most [MaxGlobLen] bytes. A refusal is a *PatternError saying which bound
// and by how much. A line search rewrites its regex so no match holds a
// newline, which makes one pass over the data enough and lets it scan in
// windows that end at line ends.
//
// # Abandoned work
//
// Walk and Grep look at their context at every entry, Grep also at every
// read and every 64 KiB window of a file, Copy at every entry and every
// 16 MiB of a file; each returns the context's error once it ends, so work
// whose client hung up stops within a window rather than at the end.
//
// # Tar extraction
//
// [Sandbox.ExtractTar] refuses a hostile archive whole: entries are extracted
// into a staging directory beside the destination, each one checked (no
// absolute names, no "..", no device nodes or FIFOs, no symlink or hard link
// whose target leaves the destination, no entry written through a symlink),
// and only a fully valid archive is merged into the destination. A file
// entry is refused on its declared size (for a GNU sparse entry, the logical
// size) against what is left of the byte limit before anything is written,
// and a sparse entry is written with holes, so a few KiB of archive never
// costs a terabyte of zeros. Directory
// modes are set last, each directory opened again below the stage one
// component at a time with O_NOFOLLOW and changed through its descriptor;
// the stage itself, and a directory merged into, likewise.
package core
