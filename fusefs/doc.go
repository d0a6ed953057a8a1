// Package fusefs mirrors a sandbox root as a FUSE filesystem (go-fuse v2,
// mounted through fusermount3), so processes use the sandbox as an ordinary
// directory while every change they make is attributed in the sandbox's
// journal, and every change made elsewhere (REST, outside writers) is seen
// through the mount at once.
//
// # Resolution: held directories, with bind-mount semantics
//
// The kernel hands a FUSE daemon an inode it already knows and one name
// (never a "/", never ".."), so the mirror names no paths. Each directory
// node the kernel knows has a core.Dir (core/dir.go), whose methods are the
// syscalls (Lookup, Getattr, Create, Mkdir, Mknod, Symlink, Link, Unlink,
// Rmdir, Rename, Readlink, Setattr, Open, the xattr calls): each request is
// one *at syscall on the parent's descriptor with the name the kernel gave,
// and a final symlink is never followed. A request on a file's own inode
// (getattr, setattr, open, readlink, xattrs) goes through its parent's Dir
// and its name in the go-fuse tree; a directory's, through its own Dir.
// Attribute changes and xattrs act on an O_PATH descriptor of exactly that
// file (through /proc/self/fd), so a name swapped for a symlink cannot
// redirect them.
//
// What this promises:
//
//   - A file at any depth works through the mount as it does on the root:
//     nothing is joined into a host path, nothing is resolved from the root,
//     so PATH_MAX bounds nothing the kernel does not bound itself.
//   - Nothing outside the root is ever reached. A Dir's descriptor is
//     opened from its parent's Dir by its one name (tree.go openSelf), and
//     checked to be the inode the node stands for; the root's is the
//     sandbox's root fd. So every descriptor was found from the root down,
//     one name at a time, inside the root, when it was opened.
//   - A directory moved out of the root is cut off once the journal tells
//     the move. A descriptor is kept (held) only where the kernel watch
//     covers the path (core.WatchView.Covers), and there the only way a
//     directory leaves the root is a rename by a process outside the mirror
//     (the mirror's own renames have both ends in held parents): inotify
//     tells it as a MOVED_FROM with no MOVED_TO inside the root, which the
//     journal tells as remove, well under a millisecond later. The journal
//     hook (coherence.go) then drops the node from the tree and releases
//     the descriptors of its subtree before the event can be read; the next
//     request opens the name from the parent again and gets ENOENT. When
//     events were lost (a queue overflow) every descriptor is released.
//     Where the watch does not cover a path, and everywhere with
//     --mount-cache 0 (strict: a move out of the root must cut the
//     directory off at once, not when the journal tells it), nothing is
//     held: each request resolves the Dir's path beneath the root fd anew
//     (openat2 RESOLVE_IN_ROOT), or past PATH_MAX opens it from its parent
//     again, name by name from the root.
//
// Why it is sound: a held descriptor names an inode, not a path, so the
// only question is whether that inode is still inside the root, and the
// only event that can change the answer is a rename out of it, which is
// the one event the watch cannot miss while it covers the directory (its
// parent is watched). Between the rename and the journal's word (the
// reader's latency) a request may still land in the moved directory,
// exactly as on a bind mount, where it would land there for ever; the
// mirror stops: a few milliseconds (RELIABILITY.md has the figure, from
// integration TestFUSECreateAfterMoveOut). Such a change is never told under the
// old path after the move: core checks, before it tells a change made
// through a descriptor held from before a directory was moved, where that
// directory is now (core/dir_guard.go), and tells nothing of one outside
// the root. This is how libfuse's passthrough_ll and passthrough_hp
// work, and what makes a change cost one syscall instead of a resolution.
// REST has no handles: each of its requests is resolved beneath the root
// fd anew.
//
// # Attribution
//
// Each mutating handler stamps its context with core.WithActor(origin fuse,
// the caller's pid and uid from fuse.FromContext, and process (proc.go),
// which core calls for the caller's comm and cgroup only when it appends an
// event) and makes one call of a
// core.Dir, which claims the paths in the ledger (so the inotify echo of
// the change is not told again as external) and appends one event,
// describing the file by the stat the call already has. Writes through a
// handle (core.Handle) are told once, as write, at flush (each close of a descriptor of
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
// The contract of a write through the mount: it is in the journal before
// the close(2) that ends it returns. So a handle open for writing keeps
// FLUSH, the one request the kernel sends before close returns, and the
// write is told in it. Skipping it (FOPEN_NOFLUSH on write handles, the
// write told at RELEASE) was measured: git's add and commit ran in 0.77x
// of the time, but the write would then reach the journal after close
// returned (an agent that writes a file and reads its changes at once
// would miss it), and an outside write landing between the last close and
// the release would be told as the handle's. A FLUSH that changed nothing
// costs an fstat (two under a byte quota) and no append.
//
// # Kernel caching
//
// Because the mirror hears of every change (the journal), it lets the kernel
// cache names, attributes, missing names, pages and directory listings for
// long (serve --mount-cache, one minute by default) and invalidates exactly
// what changed: for every event it did not make itself (origin api or
// external), the parent's dentry for the name (NotifyEntry), the parent's
// and the inode's attributes and pages (NotifyContent), and for removes and
// renames the name in the go-fuse tree. The journal hook (journal.Hook,
// invalidator.go) queues the event; the mirror's invalidator goroutine
// sends the notifications, each inode and each name once for what queued up
// together; and the appender waits for them (Hook.Settle) before the event
// is stored, so a REST call returns only once the mount shows its change,
// and an outside change is visible through the mount by the time any
// watcher can read its event (the moment inotify's reader reaches it;
// bench/results.md's "FUSE staleness" row has how long that takes; a stat
// in between may show the old state). The wait is bounded (2 s, then a
// log line, and no appender waits again until the queue has drained): the
// kernel may hold a notification for as long as a request on the same
// directory takes. Changes made through the mount need nothing: the kernel
// keeps its own caches true.
//
// The kernel may cache only what an outside change is sure to reach the
// journal for (core.WatchView.Covers): every directory is watched,
// .git and node_modules like the rest, so until the watch's first walk is
// done, and anywhere under a directory whose watch the inotify watch limit
// refused, names and attributes are given a zero timeout and pages are not
// kept, so the kernel asks at every system call there. What a watcher
// excludes by default filters its view and never decides caching. --mount-cache 0 does the same for the
// whole mount: strict coherence even with an outside writer whose event is
// still in flight, at the cost of a round trip per lookup and stat.
// READDIRPLUS is off: it makes large readdirs an order of magnitude slower
// than native.
//
// Directories are opened with no OPENDIR where the kernel takes it
// (noopendir.go): the first OPENDIR of a directory the journal hears is
// answered ENOSYS, and from then on a listing costs the daemon only the
// READDIRs the kernel's cache cannot answer, each served through a handle
// of its own. A directory the watch does not cover gets its listing
// checked against its mtime, asked at every listing from the start, so an
// outside change there that leaves the mtime as it was may be missing from
// the listing until the mtime moves; --mount-cache 0 keeps OPENDIR and
// reads every listing anew.
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
// mount. A write, a truncate or an O_TRUNC open by a process without
// CAP_FSETID clears setuid and setgid as on the root, passthrough or not:
// the kernel leaves that to the daemon (FUSE_HANDLE_KILLPRIV_V2), which
// clears them itself (killpriv.go; under passthrough, at the open for
// writing of a caller other than root).
//
// # Deadlocks: the rule for kernel notifications
//
// A notification waits in the kernel for locks a request may hold: an
// entry's, for its directory's lock, which a process creating, renaming,
// removing or looking up in that directory holds until the daemon answers
// its request; a page's, for the page lock a read holds. So:
//
//   - A notification is sent by the invalidator goroutine only, which holds
//     no lock while it sends (its queue's lock is let go first).
//   - Nothing a FUSE handler may wait for is held while anyone waits for a
//     notification: the appenders that wait (Hook.Settle: a REST call, the
//     kernel watch's reader, a checkpoint's catch-up) hold at most core's
//     outbox order lock, which no FUSE handler takes; never a sandbox's
//     notifier lock, the ledger's, the journal's (the hook runs before it is
//     taken) or a Dir's.
//   - A FUSE handler never waits for a notification: its own events need
//     none, and the one event of another origin it appends (an outside
//     write found at release) is queued without a wait
//     (journal.AppendNow); what the notifier reads when a handler opens a
//     claim waits in core's outbox for the reader.
//   - Every wait for a notification is bounded (settleWait), so even a
//     request that takes long holds up no appender for long.
//
// The daemon process never touches its own mount (tests run the daemon as
// a subprocess), but for one stat of its root as it mounts, before any
// notification can be sent, as go-fuse's own mount does (ring.go primeRoot). Unmount removes the hook and stops the invalidator before
// the server goes. TestFUSENotifyStress (integration) checks the rule: mount,
// REST and outside writers in the same directories, a watchdog failing any
// request slower than 10 s with every goroutine and the kernel stacks.
//
// One wait no rule can avoid: a daemon killed (SIGKILL, the OOM killer)
// while a notification waits for a directory's lock can never finish
// dying, since the request holding that lock will never be answered. A
// reaper process (reaper.go) aborts the connections of a dying daemon, which
// ends those requests (TestFUSEKillWhileNotifying).
//
// # Passthrough
//
// An open handle offers its backing descriptor to the kernel
// (PassthroughFd); where the kernel grants FUSE passthrough (root, kernel
// 6.9+) reads and writes then go straight to the backing file and the
// daemon receives no READ or WRITE requests, and where it refuses, go-fuse
// falls back to serving them. The kernel bounds how deep filesystems
// stack: a fork's root is an overlay, one level already, so its mirror
// allows two (MaxStackDepth), which lets the kernel take the overlay's
// files as backing files and leaves no level for an overlay over that
// mirror. Options.NoPassthrough (serve --no-passthrough) turns it off. Either way the write event is told from
// open-for-write (O_TRUNC), flush and release: a handle open for writing
// remembers the backing file's size, mtime and ctime at open and at each
// time it told, and tells write when they moved (or when a WRITE or
// fallocate came through the daemon). The page cache is then the backing
// file's own, so passthrough reads are coherent with outside writers.
//
// # Quotas
//
// A sandbox with a byte quota (core/quota) is served without
// passthrough, reads included: go-fuse gives every open of an inode the
// backing file of one already open, so one reader in passthrough would
// let a writer opened after it write past the daemon. Every WRITE then goes
// through core.Handle.WriteAt, which reserves the growth first (ENOSPC
// past the bound, nothing written); writev, fallocate and truncates go
// through the handle likewise. COPY_FILE_RANGE is not served, so the
// kernel copies through READ and WRITE. Creates, mkdir, symlink, mknod and
// link are held to the entry bound by the core.Dir calls they are.
//
// # FUSE over io_uring
//
// Options.Uring (serve --fuse-uring) serves the requests over io_uring
// where the kernel offers it (6.14+, enable_uring=Y): the mirror mounts
// with mount(2) on a /dev/fuse descriptor it opened (so root only), go-fuse
// answers INIT on it and asks for FUSE_OVER_IO_URING, and once the kernel
// agreed package uring registers two entries per possible CPU and serves
// them through a go-fuse ProtocolServer over the same RawFileSystem, so the
// same handlers run whichever way a request came, with the same
// attribution, caching and quotas (ring.go). Where the kernel does not
// offer it the mount is served over /dev/fuse, as without the option, and
// the log says so once; a ring that fails to start after the kernel agreed
// (which then holds every request until the ring is ready) has its
// connection aborted and the mount made again without it. go-fuse's
// /dev/fuse loop keeps running beside the
// ring: FORGET, INTERRUPT and the notifications still go that way. Two
// differences: an interrupt of a request being served on the ring is not
// delivered (the /dev/fuse loop does not know it and answers EAGAIN, and
// the kernel, which looks for the request on /dev/fuse's list, drops the
// interrupt: the handler runs to its end), and each queue
// is one thread serving its requests one after another, so a slow request
// delays the next one from the same CPU. The rule for notifications is
// unchanged: the ring's threads hold no lock while they serve or wait, and
// never send a notification. Unmount waits for the ring's queues, which the
// kernel ends as it tears the connection down; nothing of the ring
// outlives the mount.
//
// # Locks
//
// flock and fcntl locks are kept by the kernel on the mount's inodes (the
// mirror does not ask for FUSE lock requests): they hold between processes
// using the mount with exact POSIX semantics, but not against processes
// writing the root directly.
package fusefs
