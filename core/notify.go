package core

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// The kernel watch: inotify on the root's directories (kwatch) feeds the
// journal with what nobody else told (origin external).
//
// inotify is not recursive: the notifier adds a watch per directory, and
// a new directory is listed right after its watch is added, so files made
// in it before the watch are told too. Every directory is watched, .git,
// node_modules, __pycache__ and .venv like the rest: the journal hears
// outside changes everywhere, and the mirror lets the kernel cache
// everywhere it hears them (WatchCovers, coverage.go). What a watcher
// excludes by default (journal.DefaultExcludes) filters what it sees; it
// decides nothing about what is watched or cached.
//
// A watch is placed through the descriptor the walk holds of the directory
// it resolved beneath the root fd (kwatch.addFd, by its /proc/self/fd
// link), never by host path: nothing outside the root is watched (a
// directory moved out after its descriptor was opened is moved out under
// its parent's watch, and that move drops its watch, as for any directory
// moved out later), no identity check can be raced, and depth below the
// host root is no limit. A directory whose watch is refused (the watch
// limit: ENOSPC) is a hole: nothing at or under it is covered, so the
// kernel caches nothing there, while the rest of the tree stays cached;
// its watchers are told they lost events. WatchDegraded says the limit
// was ever reached. Beneath a directory whose watch is not placed yet
// (its Create not read), nothing is covered either (coverage.go).
//
// Why inotify on every directory (issue 17, measured on the bench VM,
// kernel 6.18, ext4, 2 cores, by core/testdata/watchcost): placing a watch costs 2.5-3.7 us by path,
// 8-10 us by descriptor counting its open and close, and about 100 bytes
// of unreclaimable kernel memory (SUnreclaim), besides pinning the
// directory's inode in the inode cache; 8,270 directories (a .git with its
// 256 object directories and a node_modules of 800 packages) took 21-29
// ms by path, 28,270 took 86-105 ms, of a budget of 192,536 watches per
// user. Reading an event costs the reader 0.3-0.4 us, and a watched
// directory costs a writer nothing above the noise (24.4 against 24.6 us
// per create, write, close and unlink). The kernel then caches under .git
// too: git init, add, commit and status of 3,000 files on the mount sent
// 28,000 LOOKUP and GETATTR requests instead of 166,000 and took about
// 6.5 s instead of 11 (go-fuse's loopback: 6.7). fanotify with a
// filesystem mark (FAN_MARK_FILESYSTEM, FAN_REPORT_DFID_NAME, FAN_RENAME)
// works here as root and needs no watch per directory, but it hears the
// whole filesystem, not the root: a cp and rm of Go's source tree
// elsewhere on the disk queued 27,320 events for the daemon to read and
// drop, and an unrelated writer can overflow the queue, which costs a
// re-walk and the mirror's whole cache. A mount mark, which would narrow
// it, refuses directory-entry events (EINVAL). Each event names its
// directory by file handle, to be mapped to an API path through a table
// the daemon keeps by walking anyway (open_by_handle_at and a readlink:
// 7-8 us an event); events of the same name merge in the queue (3,000
// create, write, unlink cycles read as 3,001 events, inotify's 9,000),
// which the journal's one event per change and the ledger's echo types
// would have to be rebuilt around; and it needs CAP_SYS_ADMIN, so inotify
// would stay for everyone else. inotify within its budget, with holes
// where it runs out, is the simpler exact answer.
//
// A rename inside the tree is MOVED_FROM(old) followed at once by
// MOVED_TO(new) with the same cookie (inotify queues them together); the
// notifier pairs them into one rename event with old_path. A MOVED_FROM
// that no MOVED_TO of its cookie follows moved out of the tree and is told
// as a remove. A directory's own events (DELETE_SELF, MOVE_SELF) are told
// by its parent's watch and dropped, but for the root's, which has no
// parent watched. A kernel
// queue overflow re-walks the tree to restore the watches and marks every
// watcher as having lost events.

// renamePairWait bounds how long a Rename(old) waits for its Create(new).
const renamePairWait = 20 * time.Millisecond

// notifier is the kernel watch's state. Its reader goroutine (run) and
// every claim opening (drain) read the queue and handle what they read,
// one at a time: mu guards the queue's reading and all below it.
type notifier struct {
	s   *Sandbox
	w   *kwatch
	log *slog.Logger
	ctl string

	mu       sync.Mutex
	closed   bool            // the kernel watch is closed: nothing to read
	ctlWd    int32           // the watch of the ledger's control directory
	dirs     map[string]bool // API paths of watched directories: cov.watched
	pending  string          // a MOVED_FROM(old) waiting for its MOVED_TO(new) …
	cookie   uint32          // … which carries this cookie …
	pairBy   time.Time       // … until then, when it is told as moved out
	scanned  map[string]bool // told by a scan; their own Create is still to come
	degraded bool
	cov      *coverage // changed under mu and cov.mu, read under either
}

// StartWatching starts the kernel watch of the root; it runs until ctx ends.
// The first walk of the tree runs in the background; WatchReady is closed
// when it is done.
func (s *Sandbox) StartWatching(ctx context.Context, log *slog.Logger) error {
	if log == nil {
		log = slog.Default()
	}
	w, err := newKwatch()
	if err != nil {
		return err
	}
	ctl, err := os.MkdirTemp(ctlParent(), "sandfs-ctl-")
	if err != nil {
		w.close()
		return err
	}
	ctlWd, err := w.add(ctl)
	if err == nil {
		err = s.ledger.setCtlDir(ctl)
	}
	if err != nil {
		w.close()
		os.RemoveAll(ctl)
		return err
	}
	cov := newCoverage()
	n := &notifier{s: s, w: w, log: log, ctl: ctl, ctlWd: ctlWd, dirs: cov.watched, cov: cov, scanned: map[string]bool{}}
	s.out.mu.Lock()
	s.out.wake = w.interrupt
	s.out.mu.Unlock()
	n.mu.Lock() // the first walk's: it lets claims in between directories
	s.ledger.reader.Store(n)
	go n.run(ctx)
	return nil
}

// drain reads and handles what the kernel has queued: the ledger calls it
// with the lock held to open a claim, so that every event queued before
// the claim is handled before it exists (never taken for its echo) and
// told before the operation's own events (outbox). It reads what the
// kernel held when it began (FIONREAD), up to drainMax: usually nothing
// (one ioctl), or the echoes of the operations just before, which the
// reader would have read (a burst's claims each read the one before's), or
// an outside change to tell. Events queued while it reads are concurrent
// with the operation, as an outside change made during it is.
//
// The bound is what an outside writer who floods the queue may cost each
// operation: without it a claim read until the queue was empty, which a
// flood never lets happen (every API operation hung); bounded by FIONREAD
// alone, each claim handled up to a whole queue (16,384 events), and a
// flood of renames made every operation 30 times slower. Past drainMax,
// what is queued before the claim is judged with it, as before issue 16:
// an outside change to a claimed path, made just before the operation
// while more than drainMax of other events waited, may be taken for the
// operation's echo. Only a flood reaches that.
func (n *notifier) drain() {
	if n.closed {
		return
	}
	had, hadCookie := n.pending, n.cookie
	for left := min(n.w.queued(), drainMax); left > 0; {
		got, err := n.w.read(n.handle, n.overflow, left)
		if err != nil || got == 0 {
			break
		}
		left -= got
	}
	if n.s.out.busy() || (n.pending != "" && (n.pending != had || n.cookie != hadCookie)) {
		n.w.interrupt() // the reader appends what was told, or waits for the pair
	}
}

// WatchDegraded reports whether the kernel watch ran into the inotify watch
// limit: some directories are not watched, so changes made there by other
// processes are not told (API and mirror changes still are), and the mirror
// lets the kernel cache nothing there (WatchCovers). Watchers of the
// unwatched directories were marked as having lost events. It stays set
// until the daemon restarts.
func (s *Sandbox) WatchDegraded() bool { return s.watchDegraded.Load() }

// WatchReady is closed once the kernel watch covers the whole tree.
func (s *Sandbox) WatchReady() <-chan struct{} { return s.watchReady }

// run is the reader: it waits for events and handles them, and appends
// what was told (outbox). StartWatching locked n.mu for its first walk.
func (n *notifier) run(ctx context.Context) {
	stop := context.AfterFunc(ctx, n.w.interrupt)
	defer func() {
		stop()
		n.s.ledger.reader.Store(nil)
		n.mu.Lock()
		n.closed = true
		n.s.ledger.setCtlDir("")
		n.w.close()
		n.mu.Unlock()
		n.s.out.mu.Lock()
		n.s.out.wake = nil
		n.s.out.mu.Unlock()
		n.s.out.flush(n.s.journal)
		os.RemoveAll(n.ctl)
	}()
	n.addQuiet("/", true)
	dirs := len(n.dirs)
	n.mu.Unlock()
	n.s.out.flush(n.s.journal)
	close(n.s.watchReady)
	n.log.Info("kernel watch ready", "sandbox", n.s.name, "directories", dirs)
	rootState := "ok"
	nextRoot := time.Now().Add(rootCheckEvery)
	for ctx.Err() == nil {
		now := time.Now()
		if !now.Before(nextRoot) {
			rootState = n.checkRoot(rootState)
			nextRoot = now.Add(rootCheckEvery)
		}
		timeout := nextRoot.Sub(now)
		n.mu.Lock()
		if n.pending != "" && !now.Before(n.pairBy) {
			n.flushPending()
		}
		if n.pending != "" && n.pairBy.Sub(now) < timeout {
			timeout = n.pairBy.Sub(now)
		}
		n.mu.Unlock()
		n.s.out.flush(n.s.journal)
		if !n.w.wait(timeout) {
			continue
		}
		n.mu.Lock()
		_, err := n.w.read(n.handle, n.overflow, 0)
		n.mu.Unlock()
		if err != nil {
			n.log.Error("kernel watch", "sandbox", n.s.name, "err", err)
		}
		n.s.out.flush(n.s.journal)
		if err != nil || n.s.ledger.busyWithin(busyFor) {
			n.w.gather()
		}
	}
}

// drainMax is the most a claim reads of what was queued before it (drain):
// about 250 events of short names, a few hundred microseconds of handling.
const drainMax = 16 << 10

// busyFor is how recently the daemon must have opened a claim for the
// reader to gather events after a read (kwatch).
const busyFor = 10 * time.Millisecond

// rootCheckEvery is how often the notifier looks whether the root directory
// is still in place. A removed root sends no inotify event while the
// sandbox holds its fd, so it is looked at, not waited for.
const rootCheckEvery = 2 * time.Second

// checkRoot logs a change of the root's state (Sandbox.RootState) and
// returns the new state.
func (n *notifier) checkRoot(was string) string {
	now := n.s.RootState()
	switch {
	case now == was:
	case now == "ok":
		n.log.Info("the sandbox root is in place again", "sandbox", n.s.name, "root", n.s.hostRoot)
	default:
		n.log.Error("the sandbox root was removed or moved away underneath the daemon: it keeps serving the directory it opened (removed: empty, nothing can be created in it); restart to serve what is at the root path now",
			"sandbox", n.s.name, "root", n.s.hostRoot, "state", now)
	}
	return now
}

// overflow: the kernel's queue overflowed, and events were dropped.
func (n *notifier) overflow() {
	n.log.Warn("inotify queue overflowed: re-walking the tree", "sandbox", n.s.name)
	n.s.ledger.lost() // their sentinels may be among the events dropped
	n.scanned = map[string]bool{}
	n.addTree("/", tellNone)
	n.s.out.push(outItem{lost: "/"})
}

func (n *notifier) apiPath(host string) (string, bool) {
	rest, ok := strings.CutPrefix(host, n.s.hostRoot)
	if !ok || (rest != "" && rest[0] != '/') {
		return "", false
	}
	if rest == "" {
		return "/", true
	}
	return rest, true
}

func (n *notifier) host(ap string) string {
	if ap == "/" {
		return n.s.hostRoot
	}
	return n.s.hostRoot + ap
}

func (n *notifier) handle(ev kevent) {
	if ev.wd == n.ctlWd {
		if ev.has(kChmod) && !ev.self {
			n.s.ledger.sentinel(filepath.Base(ev.name))
		}
		return
	}
	ap, ok := n.apiPath(ev.name)
	if !ok || (ev.self && ap != "/") {
		return
	}
	if ev.has(kRename) {
		n.flushPending()
		n.pending, n.cookie, n.pairBy = ap, ev.cookie, time.Now().Add(renamePairWait)
		return
	}
	if ev.has(kCreate) {
		if old := n.pending; old != "" && ev.cookie != 0 && ev.cookie == n.cookie {
			n.pending = ""
			n.renamed(old, ap)
			return
		}
		n.flushPending() // a create, not the rename's other half: it moved out
		n.created(ap)
		return
	}
	n.flushPending()
	if ev.has(kRemove) {
		n.removed(ap)
	}
	if ev.has(kWrite) {
		n.tell(journal.Write, ap, "", false)
	}
	if ev.has(kChmod) {
		n.tell(journal.Chmod, ap, "", false)
	}
}

// tell appends an external event unless a claim covers the path.
func (n *notifier) tell(typ journal.Type, ap, old string, isDir bool) {
	if covered, _ := n.s.ledger.claimed(ap, typ); covered {
		return
	}
	if old != "" {
		if covered, _ := n.s.ledger.claimed(old, ""); covered {
			return
		}
	}
	n.append(typ, ap, old, isDir)
}

// append tells the external event typ of ap: it goes to the outbox, which
// the reader (or the next REST operation) appends.
func (n *notifier) append(typ journal.Type, ap, old string, isDir bool) {
	e := journal.Event{Type: typ, Path: ap, OldPath: old, IsDir: isDir, Origin: journal.External}
	if typ != journal.Remove {
		if info, err := n.s.lstat(ap); err == nil {
			fillEvent(&e, info)
		}
	}
	n.s.out.push(outItem{e: e})
}

func (n *notifier) created(ap string) {
	if n.scanned[ap] {
		delete(n.scanned, ap)
		return
	}
	covered, echo := n.s.ledger.claimed(ap, journal.Create)
	if echo {
		return // the Create of a file the mirror made: nothing to tell or watch
	}
	info, err := n.s.lstat(ap)
	isDir := err == nil && info.IsDir()
	if !covered {
		n.append(journal.Create, ap, "", isDir)
	}
	if isDir {
		n.addTree(ap, tellAll)
	}
}

func (n *notifier) removed(ap string) {
	isDir := n.dirs[ap]
	n.forget(ap)
	n.tell(journal.Remove, ap, "", isDir)
}

func (n *notifier) renamed(old, ap string) {
	info, err := n.s.lstat(ap)
	isDir := err == nil && info.IsDir()
	n.forget(old)
	n.tell(journal.Rename, ap, old, isDir)
	if isDir {
		n.addTree(ap, tellSince(info.Ctime))
	}
}

// flushPending tells a Rename that no Create followed: moved out of the tree.
func (n *notifier) flushPending() {
	old := n.pending
	if old == "" {
		return
	}
	n.pending = ""
	isDir := n.dirs[old]
	n.forget(old)
	n.tell(journal.Remove, old, "", isDir)
}

// forget drops the watches of ap and everything under it. Only a watched
// directory has any: the rest (a file's remove or rename) costs nothing,
// and a directory's costs a step for each watched directory under it
// (coverage.unwatch), where a walk of every watched directory would cost
// the reader a map of the whole tree per event.
func (n *notifier) forget(ap string) {
	n.cov.unhole(ap)
	n.unscan(ap)
	if !n.dirs[ap] {
		return
	}
	for _, d := range n.cov.unwatch(ap) {
		n.w.remove(n.host(d))
	}
}

// unscan drops what a scan told of ap (and under it, for a directory)
// whose own Create never came: the entry was made before its directory's
// watch, so the kernel had none to queue. Its remove or rename away is
// read after any Create it had (the queue is in order), so what is left
// then is stale, and would swallow the Create of the next file of that
// name.
func (n *notifier) unscan(ap string) {
	if len(n.scanned) == 0 {
		return
	}
	delete(n.scanned, ap)
	if n.dirs[ap] {
		for p := range n.scanned {
			if isUnder(p, ap) {
				delete(n.scanned, p)
			}
		}
	}
}

// Which entries a walk of a newly watched tree tells as created.
var (
	tellNone func(Info) bool                   // nil: tell nothing, the quiet walk (addQuiet)
	tellAll  = func(Info) bool { return true } // a directory that arrived with contents
)

// tellSince tells the entries changed since t: after a directory rename, the
// files made in it between the rename and its new watch (a rename sets the
// moved directory's ctime, and a new file's ctime is no older).
func tellSince(t time.Time) func(Info) bool {
	return func(e Info) bool { return !e.Ctime.Before(t) }
}

// addTree watches the directory ap and every directory under it, telling as
// created the entries tell picks.
func (n *notifier) addTree(ap string, tell func(Info) bool) {
	if tell == nil {
		n.addQuiet(ap, false)
		return
	}
	if !n.addWatch(ap) {
		return
	}
	entries, _, err := n.s.List(context.Background(), ap, 0)
	if err != nil {
		return
	}
	for _, e := range entries {
		if tell(e) {
			if len(n.scanned) > journal.BufferSize {
				n.scanned = map[string]bool{}
			}
			n.scanned[e.Path] = true
			n.tell(journal.Create, e.Path, "", e.IsDir())
		}
		if e.IsDir() {
			n.addTree(e.Path, tell)
		}
	}
}

// addQuiet is addTree telling nothing (the first walk of the root, the
// re-walk after an overflow): it needs only which entries are directories,
// which the directory's own entries tell (d_type), so no entry is stat'ed,
// and one fd per directory serves the watch's identity check and the read.
// The fd is closed before descending, so the depth of the tree does not
// hold fds. The first walk (yield) lets claims in between directories: a
// large tree does not hold every operation until it is walked. Nothing
// else may yield: a read under way would lose its buffer.
func (n *notifier) addQuiet(ap string, yield bool) {
	if yield {
		n.mu.Unlock()
		n.mu.Lock()
	}
	fd, err := n.s.openat(ap, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		n.refused(ap, err)
		return
	}
	d := os.NewFile(uintptr(fd), ap)
	if !n.addWatchFd(ap, fd) {
		d.Close()
		return
	}
	ents, _ := d.ReadDir(-1)
	d.Close()
	for _, e := range ents {
		if e.IsDir() { // d_type: a symlink is never a directory here
			n.addQuiet(join(ap, e.Name()), yield)
		}
	}
}

// addWatch watches one directory, opened beneath the root fd.
func (n *notifier) addWatch(ap string) bool {
	return n.addWatchFd(ap, -1)
}

// addWatchFd is addWatch with the directory already open at fd (-1: none).
func (n *notifier) addWatchFd(ap string, dirfd int) bool {
	if n.dirs[ap] {
		return true
	}
	fd := dirfd
	if fd < 0 {
		var err error
		if fd, err = n.s.openDir(ap); err != nil {
			n.refused(ap, err)
			return false
		}
		defer unix.Close(fd)
	}
	if _, err := n.w.addFd(fd, n.host(ap)); err != nil {
		n.refused(ap, err)
		return false
	}
	n.cov.watch(ap)
	return true
}

// refused: the directory ap could not be opened or watched. Gone, or no
// longer a directory, it needs nothing: its parent's watch tells what is
// there now. Otherwise (the watch limit, ENOSPC; a descriptor refused) it
// is a hole: nothing under it is heard, so nothing under it is covered,
// and what the kernel may have cached there already (a lookup between
// its Create and now) is dropped, by telling it lost.
func (n *notifier) refused(ap string, err error) {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP) {
		return
	}
	if errors.Is(err, unix.ENOSPC) && !n.degraded {
		n.degraded = true
		n.s.watchDegraded.Store(true)
		n.log.Error("inotify watch limit reached: changes under some directories will not be seen, and the mirror caches nothing there (raise fs.inotify.max_user_watches)", "sandbox", n.s.name, "dir", ap)
	}
	if n.cov.hole(ap) {
		if !errors.Is(err, unix.ENOSPC) {
			n.log.Warn("a directory could not be watched: changes under it will not be seen", "sandbox", n.s.name, "dir", ap, "err", err)
		}
		n.s.out.push(outItem{lost: ap})
	}
}
