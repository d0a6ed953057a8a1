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
// still follow a symlink: whoever owns a directory in the root (a
// destination's parent, say) may swap a name the
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
// its limit. Path patterns live in package pathmatch, with the names
// skipped by default: [Glob] (pathmatch.Glob) matches slash-separated
// relative paths with "**", Grep's globs match the base name or the path.
// Walk, List and Grep leave out a name that is not valid UTF-8 (and do not
// descend such a directory), counting it in the [SkippedNames] of the
// context: no boundary could report it without aliasing another file
// (names.go). The path functions themselves stay byte-exact for the
// mirror.
//
// # The journal's sources
//
// Every change is one event in the sandbox's journal (package journal),
// appended by one of three sources, each with its origin:
//   - core's operations, origin api: a REST handler calls an operation,
//     which appends its event once the change is made, describing the file
//     as it is then (emit and event, actor.go). The actor in ctx
//     ([WithActor]) says who acts; a ctx without one is origin api.
//   - the FUSE mirror, origin fuse: the mirror calls the same operations
//     with an [Actor] of origin fuse that carries the calling process and
//     user. Writes through an open [Handle] are told at each flush, as
//     made by the process closing it; a change the handle finds at release
//     that did not come through the daemon is an outside writer's (the
//     handle's claim swallowed its inotify event) and is told as external
//     (handle.go).
//   - the kernel watch, origin external: whatever else changes the root (a
//     process writing the host directory) is heard by inotify on every
//     directory of the root (the kernel watch, below) and told once.
//
// [Sandbox.Emit] appends one event for a change core's operations did not
// make, through the same path as theirs. Loss is an event too: when the kernel's queue
// overflows, or a directory cannot be watched, the watchers of the subtree
// are told they lost events (journal.Lost).
//
// The order of the journal is the order the changes were made in, for
// each path and across the daemon's operations and the outside changes
// before them. The notifier never appends: its events go to an outbox
// (outbox.go) that a REST operation empties into the journal before its
// own event, and that a mirror operation's event joins when anything
// waits in it (a FUSE handler must not append another's event: the
// mirror's journal hook would invalidate kernel caches from inside a
// request). What the kernel watch hears is also what the mirror may let
// the kernel cache ([Sandbox.WatchCovers], coverage.go).
//
// # The ledger
//
// A change made by core (or the mirror) is told once, by the operation:
// its inotify echoes are dropped. The ledger (ledger.go) does it: the
// operation opens a [Claim] on the paths it is about to touch before its
// first syscall, and when it is done it marks a sentinel in a private
// control directory that the same inotify instance watches. inotify queues
// events in the order they happen, so every echo of the operation reaches
// the reader before the sentinel does: the reader drops events on claimed
// paths while the claim is open and closes the claim when it reads the
// sentinel. No time window is involved, so an outside write that lands
// right after an API write of the same file is still told.
//
// A claim opens at a read of the queue. The reader may be a millisecond or
// more behind the kernel (it lets a burst's events gather, it may be busy
// with a large read), so events of an outside change made just before the
// operation can still be queued when the claim opens; a claim filed at once
// would take them for its echoes, and the change would be lost (an outside
// "mv y z" before an API delete of z would leave every watcher with a
// phantom y). So opening a claim reads what the kernel has queued, under
// the notifier's lock, handles it, and files the claim before it lets the
// lock go (ledger.claim, notifier.drain): every event queued before the
// claim is judged without it, and every event read after it came after
// the claim opened. Nothing is compared by time or guessed by name, and it
// costs one read(2): EAGAIN when the queue is empty; in a burst through
// the mount, the echoes of the operation before, which the reader would
// otherwise have read (it then finds less). A start marker in the queue
// would cost as much (an fchmod) and an event more to read, and would
// leave the outside change to be told after the operation's own event,
// not before it: the drain tells it first, and the outbox keeps that order
// in the journal.
//
// A sentinel is an fchmod of a slot: a file of the control directory lent
// to one finished claim until the reader has read the IN_ATTRIB that names
// it. One syscall and one event a claim, no name made or removed (a link
// and its unlink would cost four events and as much time as the operation
// claimed). A slot is lent again only after its event was read, so two
// queued sentinels are never the same event, which inotify would merge.
// There are as many slots as sentinels were ever in flight at once; they
// are names under one open directory, not descriptors.
//
// An operation whose last echo is known ends its claim at that echo, with
// no sentinel at all ([Sandbox.ClaimEcho], [Claim.DoneEcho]): the unlink of
// a file has one echo, its Remove, and a file created and left as made has
// one, its Create. Since the queue is in order, reading that echo means
// every echo of the operation was read. An echo that never comes (an
// unwatched directory, one moved meanwhile) costs echoWait, then a
// sentinel. Since the claim opened after every event queued before it was
// read, a Remove or Create of the same name by someone else before the
// operation is never taken for its echo; one made while the operation runs
// is, like any outside change of a claimed path in that time (the claim
// cannot tell them from its own).
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
