package watch

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

	"sandfs/core/apipath"
	"sandfs/core/inotify"
	"sandfs/core/journal"
)

// The notifier: inotify on the root's directories (package inotify) feeds
// the journal with what nobody else told (origin external). doc.go ("The
// kernel watch") gives the design: which directories, why inotify read
// directly, renames, holes and overflows.

// renamePairWait bounds how long a Rename(old) waits for its Create(new).
const renamePairWait = 20 * time.Millisecond

// notifier is the kernel watch's state. The process's reader loop (step,
// notify_loop.go) and every claim opening (drain) read the queue and
// handle what they read, one at a time: mu guards the queue's reading and
// all below it.
type notifier struct {
	w   *Watch
	in  *inotify.Watch
	log *slog.Logger
	ctl string

	mu       sync.Mutex
	closed   bool            // the kernel watch is closed: nothing to read
	ctlWd    int32           // the watch of the ledger's control directory
	dirs     map[string]bool // API paths of watched directories: cov.watched
	pending  string          // a MOVED_FROM(old) waiting for its MOVED_TO(new) …
	cookie   uint32          // … which carries this cookie …
	pairBy   time.Time       // … until then, when it is told as moved out
	held     []string        // sentinels read while it waits (holdSentinel)
	scanned  map[string]bool // told by a scan; their own Create is still to come
	degraded bool
	dropping bool // the outbox was full: outside changes are not queued (outboxFull)

	cov       *coverage // changed under mu and cov.mu, read under either
	rootState string    // the root's state when last checked (checkRoot): only the reader loop's
}

// ErrStarted: Start was called on a Watch that was started already
// (running or ended).
var ErrStarted = errors.New("the kernel watch of this sandbox was started already")

// Start starts the kernel watch of the root; it runs until ctx ends. The
// first walk of the tree runs in the background; Ready is closed when it
// is done. A Watch is started once: a second Start is ErrStarted, and so
// is one after the first watch ended.
func (w *Watch) Start(ctx context.Context, log *slog.Logger) (err error) {
	if !w.started.CompareAndSwap(false, true) {
		return ErrStarted
	}
	defer func() {
		if err != nil {
			w.started.Store(false) // nothing was started
		}
	}()
	if log == nil {
		log = slog.Default()
	}
	in, err := inotify.New()
	if err != nil {
		return err
	}
	sweepControlDirsOnce(log)
	ctl, err := os.MkdirTemp(ctlParent(), ctlPrefix)
	if err != nil {
		in.Close()
		return err
	}
	ctlWd, err := in.Add(ctl)
	if err == nil {
		err = w.ledger.setCtlDir(ctl)
	}
	if err != nil {
		in.Close()
		os.RemoveAll(ctl)
		return err
	}
	cov := newCoverage()
	n := &notifier{w: w, in: in, log: log, ctl: ctl, ctlWd: ctlWd, dirs: cov.watched, cov: cov, scanned: map[string]bool{}}
	w.out.mu.Lock()
	w.out.wake = in.Interrupt
	w.out.mu.Unlock()
	n.mu.Lock() // the first walk's: it lets claims in between directories
	w.ledger.reader.Store(n)
	go n.run(ctx)
	return nil
}

// drain reads and handles what the kernel has queued: the ledger calls it
// with the lock held to open a claim, so that every event queued before
// the claim is handled before it exists (never taken for its echo) and
// told before the operation's own events (outbox). It reads until a read
// comes back short (the queue was empty then), up to drainMax: usually
// nothing (one read, EAGAIN), or the echoes of the operations just before,
// which the reader would have read (a burst's claims each read the one
// before's), or an outside change to tell: one read, where a FIONREAD
// before it cost a second syscall at every claim. Events queued while it
// reads are concurrent with the operation, as an outside change made
// during it is.
//
// The bound is what an outside writer who floods the queue may cost each
// operation: without it a claim read until the queue was empty, which a
// flood never lets happen (every API operation hung); bounded by what
// FIONREAD said was queued alone, each claim handled up to a whole queue
// (16,384 events), and a flood of renames made every operation 30 times
// slower. Past drainMax,
// what is queued before the claim is judged with it, as when claims did not drain:
// an outside change to a claimed path, made just before the operation
// while more than drainMax of other events waited, may be taken for the
// operation's echo. Only a flood reaches that.
func (n *notifier) drain() {
	if n.closed {
		return
	}
	had, hadCookie := n.pending, n.cookie
	n.in.Drain(n.handle, n.overflow, drainMax)
	if n.w.out.busy() || (n.pending != "" && (n.pending != had || n.cookie != hadCookie)) {
		n.in.Interrupt() // the reader appends what was told, or waits for the pair
	}
}

// Degraded reports whether the kernel watch ran into the inotify watch
// limit: some directories are not watched, so changes made there by other
// processes are not told (API and mirror changes still are), and the mirror
// lets the kernel cache nothing there (Covers). Watchers of the unwatched
// directories were marked as having lost events. It stays set until the
// daemon restarts.
func (w *Watch) Degraded() bool { return w.degraded.Load() }

// Ready is closed once the kernel watch covers the whole tree.
func (w *Watch) Ready() <-chan struct{} { return w.ready }

// run makes the first walk of the tree (Start locked n.mu for it),
// then hands the watch to the process's reader loop (notify_loop.go) until
// ctx ends.
func (n *notifier) run(ctx context.Context) {
	n.addQuiet("/", true)
	n.w.h.Made = nil // the first walk's alone: not kept for the sandbox's life
	dirs := len(n.dirs)
	n.mu.Unlock()
	n.w.out.flush(n.w.h.Journal)
	n.rootState = "ok"
	if err := readers.add(n); err != nil {
		n.log.Error("kernel watch: the reader loop refused it", "sandbox", n.w.h.Name, "err", err)
		n.stop()
		close(n.w.ready)
		return
	}
	close(n.w.ready)
	n.log.Info("kernel watch ready", "sandbox", n.w.h.Name, "directories", dirs)
	context.AfterFunc(ctx, n.stop)
}

// stop ends the kernel watch: out of the reader loop, then closed under
// the lock (a step under way finds it closed), and what was told appended.
func (n *notifier) stop() {
	readers.remove(n)
	n.w.ledger.reader.Store(nil)
	n.mu.Lock()
	n.closed = true
	n.w.ledger.setCtlDir("")
	n.in.Close()
	n.mu.Unlock()
	n.w.out.mu.Lock()
	n.w.out.wake = nil
	n.w.out.mu.Unlock()
	n.w.out.flush(n.w.h.Journal)
	os.RemoveAll(n.ctl)
}

// step is the reader loop's turn at n: it tells a rename whose pair did not
// come in time as moved out, reads what is queued, and appends what was
// told; every rootCheckEvery (roots) it checks the root; woken, it clears
// the wake-up eventfd. It reports whether the daemon is busy making changes
// here (the loop then lets events gather) and until when a rename waits
// for its pair (zero: none waits).
func (n *notifier) step(now time.Time, roots, woken bool) (busy bool, pairBy time.Time) {
	if roots && !n.w.h.Closed() {
		n.rootState = n.checkRoot(n.rootState)
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return false, time.Time{}
	}
	if woken {
		n.in.Woken()
	}
	if n.pending != "" && !now.Before(n.pairBy) {
		n.flushPending()
	}
	_, err := n.in.Read(n.handle, n.overflow, 0)
	if n.pending != "" {
		pairBy = n.pairBy
	}
	n.mu.Unlock()
	if err != nil {
		n.log.Error("kernel watch", "sandbox", n.w.h.Name, "err", err)
	}
	n.w.out.flush(n.w.h.Journal)
	n.mu.Lock()
	n.resume()
	n.mu.Unlock()
	n.w.out.flush(n.w.h.Journal)
	return err != nil || n.w.ledger.busyWithin(busyFor), pairBy
}

// drainMax is the most a claim reads of what was queued before it (drain):
// about 250 events of short names, a few hundred microseconds of handling.
const drainMax = 16 << 10

// busyFor is how recently the daemon must have opened a claim for the
// reader to gather events after a read.
const busyFor = 10 * time.Millisecond

// gatherWait is how long the notifier lets events gather after a read
// while the daemon makes changes: the most an outside change made in the
// middle of such a burst waits to be read. A loop of creates and unlinks
// through the mount woke the daemon 7.1 times per operation without
// gathering, 6.5 at 0.5 ms, 6.35 at 1 ms (the loopback: 6.2).
const gatherWait = time.Millisecond

// gather lets events gather. nanosleep(2), not a Go timer: the runtime
// waits for timers in whole milliseconds when idle.
func gather() {
	unix.Nanosleep(&unix.Timespec{Nsec: int64(gatherWait)}, nil)
}

// rootCheckEvery is how often the notifier looks whether the root directory
// is still in place. A removed root sends no inotify event while the
// sandbox holds its fd, so it is looked at, not waited for.
const rootCheckEvery = 2 * time.Second

// checkRoot logs a change of the root's state (Host.RootState) and
// returns the new state.
func (n *notifier) checkRoot(was string) string {
	now := n.w.h.RootState()
	switch {
	case now == was:
	case now == "ok":
		n.log.Info("the sandbox root is in place again", "sandbox", n.w.h.Name, "root", n.w.h.HostRoot)
	default:
		n.log.Error("the sandbox root was removed or moved away underneath the daemon: it keeps serving the directory it opened (removed: empty, nothing can be created in it); restart to serve what is at the root path now",
			"sandbox", n.w.h.Name, "root", n.w.h.HostRoot, "state", now)
	}
	return now
}

// overflow: the kernel's queue overflowed, and events were dropped.
func (n *notifier) overflow() {
	n.log.Warn("inotify queue overflowed: re-walking the tree", "sandbox", n.w.h.Name)
	n.w.ledger.lost() // their sentinels may be among the events dropped
	n.held = nil      // their slots were freed with them
	n.w.h.Uncounted() // whatever they were, a scan counts it (Host.Uncounted)
	n.scanned = map[string]bool{}
	n.addTree("/", pickNone)
	n.w.DirMoved()
	n.w.out.push(journal.Entry{Lost: "/"})
}

func (n *notifier) apiPath(host string) (string, bool) {
	rest, ok := strings.CutPrefix(host, n.w.h.HostRoot)
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
		return n.w.h.HostRoot
	}
	return n.w.h.HostRoot + ap
}

func (n *notifier) handle(ev inotify.Event) {
	if ev.Wd == n.ctlWd {
		if ev.Has(inotify.Chmod) && !ev.Self {
			n.holdSentinel(filepath.Base(ev.Name))
		}
		return
	}
	ap, ok := n.apiPath(ev.Name)
	if !ok || (ev.Self && ap != "/") {
		return
	}
	if ev.Has(inotify.Rename) {
		n.flushPending()
		n.pending, n.cookie, n.pairBy = ap, ev.Cookie, time.Now().Add(renamePairWait)
		return
	}
	if ev.Has(inotify.Create) {
		if old := n.pending; old != "" && ev.Cookie != 0 && ev.Cookie == n.cookie {
			n.pending = ""
			n.renamed(old, ap, ev.Dir)
			n.releaseSentinels()
			return
		}
		n.flushPending() // a create, not the rename's other half: it moved out
		n.created(ap, ev.Dir)
		return
	}
	n.flushPending()
	if ev.Has(inotify.Remove) {
		n.removed(ap)
	}
	if ev.Has(inotify.Write) {
		n.observe(journal.Write, ap, "", false)
	}
	if ev.Has(inotify.Chmod) {
		n.observe(journal.Chmod, ap, "", false)
	}
}

// observe judges an event the kernel watch heard: an echo of a claimed
// change is dropped, anything else is reported.
func (n *notifier) observe(typ journal.Type, ap, old string, isDir bool) {
	covered, _ := n.w.ledger.claimed(ap, typ)
	if old != "" {
		// Asked even when ap is covered: the old name's open files lose
		// their cover (ledger.unhold).
		if c, _ := n.w.ledger.claimed(old, journal.Rename); c {
			covered = true
		}
	}
	if !covered {
		n.report(typ, ap, old, isDir)
	}
}

// report tells the external event typ of ap: it goes to the outbox, which
// the reader (or the next REST operation) appends.
func (n *notifier) report(typ journal.Type, ap, old string, isDir bool) {
	e := journal.Event{Type: typ, Path: ap, OldPath: old, IsDir: isDir, Origin: journal.External}
	n.w.h.Uncounted() // by how much, a scan will say (Host.Uncounted)
	if typ != journal.Remove {
		n.w.h.Describe(&e)
	}
	if n.dropping || n.w.out.waiting.Load() >= maxOutbox {
		n.outboxFull()
		return
	}
	n.w.out.push(journal.Entry{Event: e})
}

// maxOutbox bounds what the outbox holds of outside changes (about 200
// bytes each), as the kernel's queue is bounded (fs.inotify.max_queued_events,
// 16,384 by default), four times that: a burst the reader is behind on
// waits in it. Claims read the kernel's queue into the outbox, so without
// a bound an outside writer faster than the journal grew it without end,
// and a REST call waited for all of it.
const maxOutbox = 1 << 16

// outboxFull drops an outside change because the outbox is full, as the
// kernel drops an event when its queue is: the reader tells the loss once
// the outbox has room again (resume). Watches are still added for the
// directories made meanwhile: only the telling stops.
func (n *notifier) outboxFull() {
	if !n.dropping {
		n.dropping = true
		n.log.Warn("outside changes come faster than the journal takes them: some are told as lost", "sandbox", n.w.h.Name)
	}
}

// resume ends outboxFull once the outbox has room: the watchers of the
// whole tree are told they lost events. The lock is held.
func (n *notifier) resume() {
	if n.dropping && n.w.out.waiting.Load() < maxOutbox/2 {
		n.dropping = false
		n.w.DirMoved()
		n.w.out.push(journal.Entry{Lost: "/"})
	}
}

// created handles the Create of ap, a directory if isDir (the kernel says:
// IN_ISDIR, so an echo costs no lstat).
func (n *notifier) created(ap string, isDir bool) {
	if n.scanned[ap] {
		delete(n.scanned, ap)
		return
	}
	covered, echo := n.w.ledger.claimed(ap, journal.Create)
	if echo {
		return // the Create of a file the mirror made: nothing to tell or watch
	}
	if !covered {
		n.report(journal.Create, ap, "", isDir)
	}
	if isDir {
		n.addTree(ap, pickAll)
	}
}

func (n *notifier) removed(ap string) {
	isDir := n.dirs[ap]
	if isDir {
		n.w.DirMoved()
	}
	n.forget(ap)
	n.observe(journal.Remove, ap, "", isDir)
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
		n.in.Remove(n.host(d))
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
			if apipath.Under(p, ap) {
				delete(n.scanned, p)
			}
		}
	}
}
