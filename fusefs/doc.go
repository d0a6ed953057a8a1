// Package fusefs mirrors a sandbox root as a FUSE filesystem (go-fuse v2,
// mounted through fusermount3), so processes use the sandbox as an ordinary
// directory while every change they make is attributed in the sandbox's
// journal, and every change made elsewhere (REST, outside writers) is seen
// through the mount at once.
//
// # Resolution
//
// The mirror never prefixes the root's host path to a name and hands the
// result to a path-based syscall. A node knows its API path (its place in
// the go-fuse tree, "/" + Inode.Path(nil)); every operation goes through a
// core.Sandbox method that resolves the parent beneath the root fd with
// openat2(RESOLVE_IN_ROOT) (a name right under the root uses the root fd
// itself) and acts on the last component with the *at syscalls, never
// following it. The one descriptor a node keeps, a directory's O_PATH
// descriptor, answers GETATTR and nothing else (dirfd.go). Attribute changes and xattrs act on an
// O_PATH descriptor of exactly the resolved file (through /proc/self/fd), so
// a name swapped for a symlink mid-operation cannot redirect them outside
// the root. Paths up to PATH_MAX work because nothing is joined to the host
// path.
//
// # Attribution
//
// Each mutating handler stamps its context with core.WithActor(origin fuse,
// the caller's pid and uid from fuse.FromContext) and makes one core call,
// which claims the paths in the ledger (so the inotify echo of the change is
// not told again as external) and appends one event. Writes through a
// handle are told once, as write, at flush (each close of a descriptor of
// it) when the file changed; a handle open for writing holds a ledger
// claim on its path from open until release, so the echoes of its writes
// are claimed too (a shell's `> f` dups the descriptor and closes the
// original before writing: the claim cannot end at the first flush).
// RELEASE reaches the daemon after close() has returned, so an outside
// write right after the close can land under the claim: at release, a
// change since the last flush that did not come through the daemon is told
// as external (every descriptor was closed, each close told its own
// writes), which also invalidates the kernel's caches. RELEASE carries no
// pid: the pid of the opener is told for a write told then. A handle that
// left its file as the create made it (nothing written, same size and
// times) ends its claim at the create's own echo (core.Claim.DoneEcho),
// with no sentinel; so does every unlink of a file. A new file
// written through the mount is create (at CREATE) then write (at flush). A
// handle opened read-only has nothing to tell, so it is opened with
// FOPEN_NOFLUSH and its close costs no round trip.
//
// # Kernel caching
//
// Because the mirror hears of every change (the journal), it lets the kernel
// cache names, attributes, missing names, pages and directory listings for
// long (serve --mount-cache, one minute by default) and invalidates exactly
// what changed: for every event it did not make itself (origin api or
// external), the parent's dentry for the name (NotifyEntry), the parent's
// and the inode's attributes and pages (NotifyContent), and for removes and
// renames the name in the go-fuse tree. The invalidation is a journal hook
// (journal.OnAppend): it runs in the goroutine that appends the event,
// before the event is stored, so a REST call returns only once the mount
// shows its change, and an outside change is visible through the mount by
// the time any watcher can read its event (the moment inotify's reader
// reaches it: about 0.1 ms at the median and 3 ms at p99 on the bench VM,
// up to a millisecond more while the daemon's own changes are streaming in;
// a stat in between may show the old state). Changes made
// through the mount need nothing: the kernel keeps its own caches true.
//
// The kernel may cache only what an outside change is sure to reach the
// journal for (core.Sandbox.WatchCovers): until the watch's first walk is
// done, after the inotify watch limit refused a directory, and anywhere
// under the directories never watched (.git, node_modules, …), names and
// attributes are given a zero timeout and pages are not kept, so the kernel
// asks at every system call there. --mount-cache 0 does the same for the
// whole mount: strict coherence even with an outside writer whose event is
// still in flight, at the cost of a round trip per lookup and stat.
// READDIRPLUS is off: it makes large readdirs an order of magnitude slower
// than native.
//
// # Modes
//
// A file made through the mount gets the caller's mode and umask exactly,
// as on the root. The mirror does not ask for FUSE_DONT_MASK (go-fuse
// v2.12 never does), so the kernel applies the caller's umask itself and
// the mode of CREATE, MKDIR and MKNOD is final: CreateIn.Umask and
// MkdirIn.Umask are only informational. The kernel has also checked the
// caller already: it drops a setgid the caller may not set, and mkdir(2)
// takes no setuid or setgid. The daemon's own umask would cut that mode
// again, and giving the file to the caller (chown) clears setuid and
// setgid, so core sets the kernel's mode afterwards where it differs
// (core/modes.go); the API's --allow-setid policy does not apply to the
// mount. A write or an O_TRUNC open by a process without CAP_FSETID clears
// setuid and setgid as on the root, passthrough or not: the kernel sends
// the SETATTR that clears them before the write reaches the backing file.
//
// # Deadlocks
//
// A notify for an inode blocks while the kernel holds a lock a running
// handler of a related inode waits on, so notifies are never issued from a
// FUSE handler: the hook skips the mirror's own events, which are the only
// ones appended from inside a handler, and it holds no lock a handler
// takes. A handler's claim reads the kernel watch's queue when it opens
// (core's ledger), but what that read tells waits in core's outbox for the
// reader goroutine, and the handler's own event joins it there: a handler
// never appends an outside change it read. The daemon process never
// touches its own mount (tests run the daemon as a subprocess). Unmount
// removes the hook before unmounting.
//
// # Passthrough
//
// An open handle offers its backing descriptor to the kernel
// (PassthroughFd); where the kernel grants FUSE passthrough (root, kernel
// 6.9+) reads and writes then go straight to the backing file and the
// daemon receives no READ or WRITE requests, and where it refuses, go-fuse
// falls back to serving them. Options.NoPassthrough (serve
// --no-passthrough) turns it off. Either way the write event is told from
// open-for-write (O_TRUNC), flush and release: a handle open for writing
// remembers the backing file's size, mtime and ctime at open and at each
// time it told, and tells write when they moved (or when a WRITE or
// fallocate came through the daemon). The page cache is then the backing
// file's own, so passthrough reads are coherent with outside writers.
//
// # Locks
//
// flock and fcntl locks are kept by the kernel on the mount's inodes (the
// mirror does not ask for FUSE lock requests): they hold between processes
// using the mount with exact POSIX semantics, but not against processes
// writing the root directly.
package fusefs
