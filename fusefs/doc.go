// Package fusefs mirrors a sandbox root as a FUSE filesystem (go-fuse v2,
// mounted through fusermount3), so processes use the sandbox as an ordinary
// directory while every change they make is attributed in the sandbox's
// journal, and every change made elsewhere (REST, outside writers) is seen
// through the mount at once.
//
// # Resolution
//
// The mirror never prefixes the root's host path to a name and hands the
// result to a path-based syscall. A node knows only its API path (its
// place in the go-fuse tree, "/" + Inode.Path(nil)); every operation goes
// through a core.Sandbox method that resolves the parent beneath the root
// fd with openat2(RESOLVE_IN_ROOT) and acts on the last component with the
// *at syscalls, never following it. Attribute changes and xattrs act on an
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
// handle are told once, as write, at flush (when the handle wrote) and at
// release if writes came after the last flush; a handle open for writing
// holds a ledger claim on its path from open until release, so the echoes
// of its writes are claimed too. RELEASE carries no pid: the pid of the
// opener is told then. A new file written through the mount is create (at
// CREATE) then write (at flush).
//
// # Kernel caching
//
// The mirror subscribes to the sandbox journal and, for every event it did
// not make itself (origin api or external), invalidates what the kernel may
// hold: the parent's dentry for the name (NotifyEntry), the inode's
// attributes and pages (NotifyContent), and for removes and renames drops
// the name from the go-fuse tree so paths stay true. Because the outside
// changes reach the journal asynchronously (inotify), the entry, attribute
// and negative timeouts default to zero: every lookup and getattr is
// answered from the backing directory, so a change is seen on the next
// system call without any sleep. Options.EntryTimeout and friends allow
// long timeouts where invalidation alone is enough (changes only through
// the mount and REST). READDIRPLUS is off: it makes large readdirs an order
// of magnitude slower than native.
//
// # Deadlocks
//
// A notify for an inode blocks while the kernel holds a lock a running
// handler of a related inode waits on, so notifies are never issued from a
// FUSE handler: the journal subscription feeds one goroutine, which issues
// them. The daemon process never touches its own mount (tests run the
// daemon as a subprocess). Unmount stops the notifier before unmounting.
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
