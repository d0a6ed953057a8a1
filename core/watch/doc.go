// Package watch is the machinery of "every change told once" for one
// sandbox: the ledger of claims that drops the kernel's echoes of the
// daemon's own changes, the kernel watch (the notifier, inotify on every
// directory of the root, read by one loop for the whole process) that
// reports everything else, the outbox that keeps the two in the order the
// changes were made, and the coverage that says what the watch hears. It
// is below core: core opens a [Watch] per sandbox and gives it what it
// needs through a [Host] (the journal, the names, and functions that
// stat, list and open beneath the root descriptor), so the watch never
// resolves a path itself. It imports the journal, core/inotify,
// core/apipath and internal leaves, and never core, nor anything above.
//
// # Vocabulary
//
// Each way an event reaches the journal has one verb, and no verb means
// two of them:
//   - tell: the daemon tells a change it made itself, one event by the
//     actor in the context, describing the file as it is then
//     (Sandbox.Tell, for core's operations and its subpackages'; tellFd and
//     tellStat; Handle.tellWrites for what a mirror handle wrote).
//   - emit: a change none of core's operations made, and none counted,
//     handed to core by whoever saw it (Sandbox.Emit).
//   - observe: the notifier heard an event from the kernel; the ledger
//     judges it, and an echo of a claimed change is dropped
//     (notifier.observe).
//   - report: what the notifier observed and no claim covers becomes an
//     external event in the outbox (notifier.report; outbox.push queues
//     it, and a loss).
//   - append: the one step into the journal, in order behind what waits
//     in the outbox ([Watch.Append], [Watch.AppendChecked]; core's append
//     decides which from the context); flush appends what waits.
//
// In prose, a change is "told" when its event reaches the journal by any
// of these, as in "every change told once".
//
// # The journal's sources
//
// Every change is one event in the sandbox's journal (package journal),
// appended by one of three sources, each with its origin:
//   - core's operations, origin api: a REST handler calls an operation,
//     which tells its event once the change is made, describing the file
//     as it is then (Tell, core/actor.go). The actor in ctx
//     (core.WithActor) says who acts; a ctx without one is origin api.
//   - the FUSE mirror, origin fuse: the mirror calls the same operations
//     with a core.Actor of origin fuse that carries the calling process and
//     user. Writes through an open core.Handle are told at each flush, as
//     made by the process closing it; a change the handle finds at release
//     that did not come through the daemon is an outside writer's (the
//     handle's claim swallowed its inotify event) and is told as external
//     (core/handle.go).
//   - the kernel watch, origin external: whatever else changes the root (a
//     process writing the host directory) is heard by inotify on every
//     directory of the root, .git and node_modules too (notify.go, package
//     inotify; "The kernel watch" below says why inotify), observed, and
//     reported once. What it hears is what the mirror may let the kernel
//     cache (coverage.go).
//
// Sandbox.Emit emits one event for a change core's operations did not
// make, through the same path as theirs. Loss is an event too: when the
// kernel's queue overflows, or a directory cannot be watched, the
// watchers of the subtree are told they lost events (journal.Lost).
//
// The order of the journal is the order the changes were made in, for
// each path and across the daemon's operations and the outside changes
// before them. The notifier never appends: its events go to an outbox
// (outbox.go) that a REST operation empties into the journal before its
// own event, and that a mirror operation's event joins when anything
// waits in it (a FUSE handler must not wait for the mirror's kernel
// notifications, which an append of another's event does: the kernel may
// be waiting for that very handler to send them; fusefs/doc.go,
// "Deadlocks"). A flush appends what waited when it began, as one batch
// (journal.AppendAll: the notifications of the batch waited for once), so
// neither the reader nor a REST call behind it waits for changes that keep
// coming. What the kernel watch hears is also what the mirror may let
// the kernel cache ([Watch.Covers], coverage.go).
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
// An operation whose last echo is known ends its claim at that echo, with no
// sentinel at all ([Watch.ClaimEcho], [Claim.DoneEcho]): the unlink of a
// file has one echo, its Remove, a file created and left as made has one,
// its Create, a change of one attribute of a file that is not a directory
// (a mode, an owner, both times) has one, its Chmod (core/setattr.go
// claimAttrs), and the last of a WriteFile or an Upload is the Rename of its
// temp file over the target ([Claim.EchoAt]: the temp name, which is the
// write's alone, not the target's, which two writes share). Since the queue
// is in order, reading that echo means every echo of the operation was read.
// An echo that never comes (an unwatched directory, one moved meanwhile)
// costs echoWait, then a sentinel. Since the claim opened after every event
// queued before it was read, a Remove or Create of the same name by someone
// else before the operation is never taken for its echo; one made while the
// operation runs is, like any outside change of a claimed path in that time
// (the claim cannot tell them from its own).
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
// the kernel cache everywhere it hears them (Covers, coverage.go).
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
// events. Degraded says the limit was ever reached. Beneath a
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
// core or the watch. The daemon reads inotify itself, not through fsnotify, for what
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
//     queued: one non-blocking read under the notifier's lock, more only
//     while reads come back full, up to drainMax (notify.go drain). A
//     channel filled by another goroutine cannot say what was queued
//     before a given moment, and it costs a change through the mount two
//     goroutine wake-ups and an epoll wait on the other core while the
//     caller waits for its reply.
//
// fsnotify stays as an independent judge: a test runs it on the same root
// as the notifier (core/notify_fsnotify_test.go), and the bench's event-latency
// rows take its latency as their anchor.
//
// One reader loop serves every sandbox of the process (notify_loop.go):
// one goroutine waits in one epoll instance on every sandbox's inotify
// descriptor and its wake-up eventfd, and handles each sandbox's events
// under that sandbox's lock, as a claim's read does. While the daemon is
// making changes itself (a sandbox it read for opened a ledger claim in the
// last busyFor: a burst through the mount or the API), it lets events
// gather for gatherWait after a read before it waits again: while nobody
// waits on the descriptors the kernel queues an event without waking
// anyone, so the burst's echoes cost one wake-up per gatherWait instead of
// one per change. Otherwise (an outside writer alone) it waits again at
// once, and a change is read as soon as the kernel queues it. In a burst,
// each claim reads the echoes of the operation before it, and the reader
// finds less to read. A reader per sandbox, each blocked in poll(2) on its
// own descriptor, cost writes spread over 100 sandboxes half their rate:
// each change woke that sandbox's thread two or three times, each wake-up
// a runtime hand-off of a processor.
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
package watch
