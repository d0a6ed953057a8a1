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
// fuse); the kernel watch (notify.go, package inotify) tells the rest, origin
// external. It watches every directory of the root (.git and node_modules
// too: "The kernel watch" says why inotify, with the figures), and what it hears
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
//
// # The kernel watch
//
// The notifier (notify.go) tells the journal what nobody else told, origin
// external: changes made by processes writing the root directly. It reads
// inotify, which is not recursive, so it adds a watch per directory
// (notify_tree.go), and lists a new directory right after its watch is
// added, so files made in it before the watch are told too. Every
// directory is watched, .git, node_modules, __pycache__ and .venv like the
// rest: the journal hears outside changes everywhere, and the mirror lets
// the kernel cache everywhere it hears them (WatchCovers, coverage.go).
// What a watcher excludes by default (journal.DefaultExcludes) filters what
// it sees; it decides nothing about what is watched or cached.
//
// A watch is placed through the descriptor the walk holds of the directory
// it resolved beneath the root fd (by its /proc/self/fd link), never by
// host path: nothing outside the root is watched (a directory moved out
// after its descriptor was opened is moved out under its parent's watch,
// and that move drops its watch, as for any directory moved out later), no
// identity check can be raced, and depth below the host root is no limit.
// A directory whose watch is refused (the watch limit: ENOSPC) is a hole:
// nothing at or under it is covered, so the kernel caches nothing there,
// while the rest of the tree stays cached; its watchers are told they lost
// events. WatchDegraded says the limit was ever reached. Beneath a
// directory whose watch is not placed yet (its Create not read), nothing
// is covered either (coverage.go).
//
// A rename inside the tree is MOVED_FROM(old) followed at once by
// MOVED_TO(new) with the same cookie (inotify queues them together); the
// notifier pairs them into one rename event with old_path. A MOVED_FROM
// that no MOVED_TO of its cookie follows moved out of the tree and is told
// as a remove. A directory's own events (DELETE_SELF, MOVE_SELF) are told
// by its parent's watch and dropped, but for the root's, which has no
// parent watched. A kernel queue overflow re-walks the tree to restore the
// watches and marks every watcher as having lost events.
//
// The reader is package sandfs/core/inotify, which imports nothing from
// core. The daemon reads inotify itself, not through fsnotify, for what
// the journal needs of it:
//
//   - Rename cookies. One rename is one event with old_path, paired by the
//     cookie MOVED_FROM and MOVED_TO share. fsnotify keeps the cookie to
//     itself and hands a Rename of the old name and a Create of the new
//     one, which a reader can pair only by guessing.
//   - Watches confined at the kernel. Every watch asks IN_ONLYDIR, so a
//     directory swapped for a file or a symlink is refused rather than
//     watched, and the one watch placed by host path (the ledger's control
//     directory) asks IN_DONT_FOLLOW. fsnotify passes neither: its Add
//     follows a symlink at the name.
//   - Watches placed by descriptor, through /proc/self/fd: the kernel
//     watches exactly the inode the walk resolved, whatever its name is
//     now. fsnotify keys its watches by the path it was given and names
//     events by it, which here would be the link of a descriptor since
//     closed.
//   - Naming an event when it is handled. fsnotify's goroutine turns each
//     event's watch into a path as it reads it, ahead of its consumer, so
//     an event of a watch the notifier has just dropped (the MOVE_SELF of
//     a directory it saw renamed) still arrives, under its old path. Here
//     an event is named by its watch only when the notifier handles it,
//     after the events before it, and a dropped watch's events are dropped.
//   - Reading in step with claims. A ledger claim opens by reading what is
//     queued: one non-blocking read under the notifier's lock, at most
//     what FIONREAD said was there (ledger.go). A channel filled by another
//     goroutine cannot say what was queued before a given moment, and it
//     costs a change through the mount two goroutine wake-ups and an epoll
//     wait on the other core while the caller waits for its reply.
//
// fsnotify stays as an independent judge: a test runs it on the same root
// as the notifier (notify_fsnotify_test.go), and the bench's event-latency
// rows take its latency as their anchor.
//
// The reader polls the descriptor itself (poll(2), blocking, with a
// wake-up eventfd beside it) and reads what is queued in one read. While
// the daemon is making changes itself (it opened a ledger claim in the
// last busyFor: a burst through the mount or the API), it lets events
// gather for gatherWait after a read before it waits again: while nobody
// waits on the descriptor the kernel queues an event without waking anyone,
// so the burst's echoes cost one wake-up per gatherWait instead of one per
// change. Otherwise (an outside writer alone) it waits again at once, and
// a change is read as soon as the kernel queues it. In a burst, each claim
// reads the echoes of the operation before it, and the reader finds less
// to read.
//
// Why inotify on every directory (measured on the bench VM, kernel 6.18,
// ext4, 2 cores, by core/testdata/watchcost): placing a watch costs 2.5-3.7
// us by path, 8-10 us by descriptor counting its open and close, and about
// 100 bytes of unreclaimable kernel memory (SUnreclaim), besides pinning
// the directory's inode in the inode cache; 8,270 directories (a .git with
// its 256 object directories and a node_modules of 800 packages) took
// 21-29 ms by path, 28,270 took 86-105 ms, of a budget of 192,536 watches
// per user. Reading an event costs the reader 0.3-0.4 us, and a watched
// directory costs a writer nothing above the noise (24.4 against 24.6 us
// per create, write, close and unlink). The kernel then caches under .git
// too: git init, add, commit and status of 3,000 files on the mount sent
// 28,000 LOOKUP and GETATTR requests instead of 166,000 and took about 6.5
// s instead of 11 (go-fuse's loopback: 6.7). fanotify with a filesystem
// mark (FAN_MARK_FILESYSTEM, FAN_REPORT_DFID_NAME, FAN_RENAME) works here
// as root and needs no watch per directory, but it hears the whole
// filesystem, not the root: a cp and rm of Go's source tree elsewhere on
// the disk queued 27,320 events for the daemon to read and drop, and an
// unrelated writer can overflow the queue, which costs a re-walk and the
// mirror's whole cache. A mount mark, which would narrow it, refuses
// directory-entry events (EINVAL). Each event names its directory by file
// handle, to be mapped to an API path through a table the daemon keeps by
// walking anyway (open_by_handle_at and a readlink: 7-8 us an event);
// events of the same name merge in the queue (3,000 create, write, unlink
// cycles read as 3,001 events, inotify's 9,000), which the journal's one
// event per change and the ledger's echo types would have to be rebuilt
// around; and it needs CAP_SYS_ADMIN, so inotify would stay for everyone
// else. inotify within its budget, with holes where it runs out, is the
// simpler exact answer.
package core
