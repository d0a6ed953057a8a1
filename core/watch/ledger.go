package watch

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/core/journal"
	"sandfs/internal/safeat"
)

// ledger drops the inotify echoes of core's own changes, so each is told
// once: an operation claims its paths before its first syscall and ends
// the claim by a sentinel (an fchmod of a slot in a watched control
// directory) or by its own last echo. doc.go ("The ledger") has the
// design: why a claim opens at a read of the queue, and why the queue's
// order makes a sentinel enough.
type ledger struct {
	mu     sync.Mutex
	next   uint64
	open   map[uint64]*Claim
	byPath map[string][]*Claim      // the open claims holding each path
	opened atomic.Int64             // when the last claim was opened (Unix ns)
	ctlDir atomic.Pointer[string]   // nil while no kernel watch runs: claims close at once
	ctlFd  int                      // the control directory, while ctlDir is set
	reader atomic.Pointer[notifier] // the kernel watch, whose queue a claim reads to open
	free   []string                 // slots not lent
	lent   map[string][]uint64      // by slot: the claims its sentinel closes
	slots  int                      // slots made

	fallback *time.Timer   // lends the claims that wait for an echo a sentinel
	armed    bool          // fallback is set to fire
	wait     time.Duration // how long it waits: echoWait unless a test says
	marked   int           // sentinels marked (read by the tests)
}

// Claim is one operation's hold on the echoes of its changes.
type Claim struct {
	l      *ledger
	id     uint64
	paths  []string     // API paths; each covers its subtree
	echoOf journal.Type // of ClaimEcho: the type of the last echo, of paths[0] (or echoAt)
	echoAt string       // the path of that echo when not paths[0] (EchoAt)
	echoed bool         // that echo has been read
	held   bool         // an open file's (claimFile): no remove or rename of its path
	moved  bool         // held, and its name was removed or renamed since (unhold)
	waits  bool         // done, waiting for that echo …
	since  time.Time    // … since then
}

// echoWait is how long a claim closed by its own last echo (DoneEcho) waits for
// it before it is lent a sentinel after all: the echo never comes when its
// directory is not watched, or is told under another name when the
// directory was moved meanwhile.
const echoWait = 10 * time.Millisecond

// Claim opens a claim on the given API paths (each with everything under
// it). Add more with Add; Done must be called when the changes are made.
func (w *Watch) Claim(paths ...string) *Claim {
	return w.ledger.claim(&Claim{paths: append([]string(nil), paths...)})
}

// claim opens c: first it reads what the kernel has queued (drain), under
// the notifier's lock, and files c before that lock is let go, so that the
// claim opens at that read: the events queued before it are handled (and
// told) without it, and every event read after it is the claim's to judge.
func (l *ledger) claim(c *Claim) *Claim {
	if n := l.reader.Load(); n != nil {
		n.mu.Lock()
		defer n.mu.Unlock()
		n.drain()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	c.l, c.id = l, l.next
	if l.open == nil {
		l.open, l.byPath = map[uint64]*Claim{}, map[string][]*Claim{}
	}
	l.open[c.id] = c
	l.index(c, c.paths)
	l.opened.Store(time.Now().UnixNano())
	return c
}

// busyWithin reports whether a claim was opened in the last d: the daemon
// is making changes, and more of their echoes are likely on their way.
func (l *ledger) busyWithin(d time.Duration) bool {
	return time.Now().UnixNano()-l.opened.Load() < int64(d)
}

// index files the open claim c under paths. The lock is held.
func (l *ledger) index(c *Claim, paths []string) {
	for _, p := range paths {
		l.byPath[p] = append(l.byPath[p], c)
	}
}

// close closes the claim id. The lock is held.
func (l *ledger) close(id uint64) {
	c, ok := l.open[id]
	if !ok {
		return
	}
	delete(l.open, id)
	for _, p := range c.paths {
		cs := l.byPath[p]
		for i, x := range cs {
			if x == c {
				cs[i] = cs[len(cs)-1]
				cs[len(cs)-1] = nil
				cs = cs[:len(cs)-1]
				break
			}
		}
		if len(cs) == 0 {
			delete(l.byPath, p)
		} else {
			l.byPath[p] = cs
		}
	}
}

// ClaimFile opens the claim of a file opened for writing through the
// mirror (core's Dir.Open, Dir.Create), held from its open to its release, with
// the echo typ to end at ("" for none: ClaimEcho). It covers the echoes of
// what is done to the file's content (a write, a truncate), and no chmod
// (covers) and no remove or rename of its name, which are never the
// handle's (the mirror's own setattr, unlink and rename claim theirs).
// Without that, an outside rm of a file a process had just closed through
// the mount was swallowed (the release reaches the daemon after close(2)
// returns), and so was one of a file an editor keeps open.
func (w *Watch) ClaimFile(ap string, echo journal.Type) *Claim {
	return w.ledger.claim(&Claim{paths: []string{ap}, echoOf: echo, held: true})
}

// NameGone reports whether the held claim's name was removed or renamed
// away since it opened (told by the kernel watch, as external), once what
// the kernel queued until now is read.
func (c *Claim) NameGone() bool {
	c.l.readQueued()
	c.l.mu.Lock()
	defer c.l.mu.Unlock()
	return c.moved
}

// readQueued handles what the kernel has queued so far (drain).
func (l *ledger) readQueued() {
	if n := l.reader.Load(); n != nil {
		n.mu.Lock()
		n.drain()
		n.mu.Unlock()
	}
}

// Add extends the claim to more paths.
func (c *Claim) Add(paths ...string) {
	c.l.mu.Lock()
	c.add(paths)
	c.l.mu.Unlock()
}

// add is Add with the lock held.
func (c *Claim) add(paths []string) {
	if _, ok := c.l.open[c.id]; ok {
		c.l.index(c, paths)
	}
	c.paths = append(c.paths, paths...)
}

// Done ends the operation: its echoes are claimed until the reader meets the
// sentinel. Done twice is harmless.
func (c *Claim) Done() {
	l := c.l
	l.mu.Lock()
	if _, ok := l.open[c.id]; !ok {
		l.mu.Unlock()
		return
	}
	dir := l.dir()
	if dir == "" {
		l.close(c.id)
		l.mu.Unlock()
		return
	}
	l.mark(c.id)
	l.mu.Unlock()
}

// mark lends the claims ids one slot and marks it: they close when the
// reader meets its event. Marked under the lock, so setCtlDir cannot close
// the directory's descriptor in between (and fchmodat one that reused its
// number). Without a slot they close at once: better a duplicate event
// than a lost one.
func (l *ledger) mark(ids ...uint64) {
	if sl, ok := l.takeSlot(); !ok || safeat.ChmodAt(l.ctlFd, sl, 0o600) != nil {
		for _, id := range ids {
			l.close(id)
		}
		if ok {
			l.free = append(l.free, sl)
		}
	} else {
		l.lent[sl] = ids
		l.marked++
	}
}

// ClaimEcho opens a claim on API path p for an operation whose last echo
// is the event typ of p: the Remove of a file unlinked, the Create of a
// file made and left as it was. DoneEcho then ends it at that echo, with
// no sentinel. An operation that turns out to make more echoes (it failed,
// or changed more) calls NoEcho, or ends with Done.
func (w *Watch) ClaimEcho(p string, typ journal.Type) *Claim {
	return w.ledger.claim(&Claim{paths: []string{p}, echoOf: typ})
}

// EchoAt extends the claim to p and makes it end at the echo typ of p,
// as a claim of ClaimEcho ends at its own: a WriteFile's last echo is the
// Rename of its temp file over the target, and the temp file's name is the
// operation's alone, so two writes of one target never take each other's
// echo (a target's would: one write's rename could end the other's claim
// before that one renamed, and leave its rename told as external).
func (c *Claim) EchoAt(p string, typ journal.Type) {
	c.l.mu.Lock()
	c.add([]string{p})
	c.echoOf, c.echoAt = typ, p
	c.l.mu.Unlock()
}

// echoPath is the path of the echo the claim ends at (of ClaimEcho or
// EchoAt). The lock is held.
func (c *Claim) echoPath() string {
	if c.echoAt != "" {
		return c.echoAt
	}
	return c.paths[0]
}

// NoEcho makes the claim end by its sentinel, even through DoneEcho.
func (c *Claim) NoEcho() {
	c.l.mu.Lock()
	c.echoOf = ""
	c.l.mu.Unlock()
}

// DoneEcho ends a claim of ClaimEcho whose operation made nothing after
// its last echo: the claim closes when the reader has read that echo (at
// once if it already has), or after echoWait by a sentinel if it never
// comes. Without an echo to wait for (NoEcho) it is Done.
func (c *Claim) DoneEcho() {
	l := c.l
	l.mu.Lock()
	if c.echoOf == "" {
		l.mu.Unlock()
		c.Done()
		return
	}
	defer l.mu.Unlock()
	if _, ok := l.open[c.id]; !ok {
		return
	}
	if c.echoed || l.dir() == "" {
		l.close(c.id)
		return
	}
	if l.wait == 0 {
		l.wait = echoWait
	}
	c.waits, c.since = true, time.Now()
	if !l.armed {
		l.arm(l.wait)
	}
}

// arm sets the fallback to fire in d. The lock is held.
func (l *ledger) arm(d time.Duration) {
	l.armed = true
	if l.fallback == nil {
		l.fallback = time.AfterFunc(d, l.lendWaiting)
	} else {
		l.fallback.Reset(d)
	}
}

// lendWaiting lends one sentinel to every claim that has waited echoWait
// for its echo (the fallback timer), and sets itself again for the claims
// that have waited less. Without a control directory none waits:
// setCtlDir("") closed them.
func (l *ledger) lendWaiting() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed = false
	now := time.Now()
	var ids []uint64
	var next time.Duration
	for id, c := range l.open {
		if !c.waits {
			continue
		}
		if left := l.wait - now.Sub(c.since); left > 0 {
			if next == 0 || left < next {
				next = left
			}
			continue
		}
		c.waits = false
		ids = append(ids, id)
	}
	if len(ids) > 0 {
		l.mark(ids...)
	}
	if next > 0 {
		l.arm(next)
	}
}

// takeSlot lends a free slot, making one when none is free. The lock is
// held.
func (l *ledger) takeSlot() (string, bool) {
	if n := len(l.free); n > 0 {
		sl := l.free[n-1]
		l.free = l.free[:n-1]
		return sl, true
	}
	name := strconv.Itoa(l.slots)
	fd, err := unix.Openat(l.ctlFd, name, unix.O_CREAT|unix.O_RDONLY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return "", false
	}
	unix.Close(fd)
	l.slots++
	return name, true
}

// claimed reports whether an open claim covers the event typ of API path
// p (typ "" for a question that is no event). The oldest claim of
// ClaimEcho waiting for that very event covers it and closes (once done);
// echo says so. A remove or rename of p (either of its names) ends the
// cover of the open files' claims on p (claimFile): they cover neither it nor
// what comes later under that name, another file's. It looks only at the
// claims filed under p and its ancestors, so its cost is the depth of p,
// not the number of claims open.
func (l *ledger) claimed(p string, typ journal.Type) (covered, echo bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if typ == journal.Remove || typ == journal.Rename {
		l.unhold(p)
	}
	if typ != "" {
		var first *Claim
		for _, c := range l.byPath[p] {
			if c.echoOf == typ && !c.echoed && c.echoPath() == p && (first == nil || c.id < first.id) {
				first = c
			}
		}
		if first != nil {
			first.echoed = true
			if first.waits {
				l.close(first.id)
			}
			return true, true
		}
	}
	for q := p; ; {
		for _, c := range l.byPath[q] {
			if c.covers(typ) {
				return true, false
			}
		}
		if q == "/" || len(q) == 0 || q[0] != '/' {
			return false, false
		}
		q, _ = apipath.Split(q)
	}
}

// covers reports whether the open claim c covers an event typ of its
// paths. An open file's claim (ClaimFile) covers what its writes do, but
// not a chmod: its handle changes no mode (the mirror's setattr and a
// create's own mode fix claim theirs), so an IN_ATTRIB there is someone
// else's chmod, chown or setcap while the file is open, and is told.
func (c *Claim) covers(typ journal.Type) bool {
	return !c.held || typ != journal.Chmod
}

// unhold files no open file's claim under p any more: the name is gone
// from the file (removed, or renamed away or over). The claims stay open
// until their sentinels, as before. The lock is held.
func (l *ledger) unhold(p string) {
	cs := l.byPath[p]
	kept := cs[:0]
	for _, c := range cs {
		if c.held {
			c.moved = true
		} else {
			kept = append(kept, c)
		}
	}
	clear(cs[len(kept):])
	if len(kept) == 0 {
		delete(l.byPath, p)
	} else {
		l.byPath[p] = kept
	}
}

// sentinel handles the IN_ATTRIB of a slot: the claim it was lent to is
// over, and the slot is free again. Only the reader calls it.
func (l *ledger) sentinel(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ids, ok := l.lent[name]
	if !ok {
		return // a slot being made, or one freed by lost()
	}
	delete(l.lent, name)
	for _, id := range ids {
		l.close(id)
	}
	l.free = append(l.free, name)
}

// lost closes every claim waiting for its sentinel: the kernel queue
// overflowed, and the sentinel may be among the events it dropped (the
// watchers were told they lost events). A sentinel still queued may then
// close a later claim of its slot early: an echo told twice, never a change
// lost.
func (l *ledger) lost() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closeLent()
}

// closeLent closes every claim waiting for its sentinel (freeing its
// slot) or for its echo. The lock is held.
func (l *ledger) closeLent() {
	for name, ids := range l.lent {
		delete(l.lent, name)
		for _, id := range ids {
			l.close(id)
		}
		l.free = append(l.free, name)
	}
	for id, c := range l.open {
		if c.waits {
			l.close(id)
		}
	}
}

// setCtlDir starts (dir) or stops ("") closing claims by sentinel; the
// directory must be empty and watched by the reader. Stopping closes every
// claim waiting for a sentinel.
func (l *ledger) setCtlDir(dir string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ctlDir.Load() != nil {
		unix.Close(l.ctlFd)
		l.ctlDir.Store(nil)
	}
	l.closeLent()
	l.free, l.slots = nil, 0
	if dir == "" {
		return nil
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	if err := lockCtlDir(fd); err != nil { // in use for as long as fd is open (ledger_ctl.go)
		unix.Close(fd)
		return err
	}
	l.ctlFd, l.lent = fd, map[string][]uint64{}
	l.ctlDir.Store(&dir)
	return nil
}

// dir is the control directory, "" while no kernel watch runs. It is read
// without the ledger's lock: the mirror asks (through Running) at every
// lookup it may let the kernel cache.
func (l *ledger) dir() string {
	if p := l.ctlDir.Load(); p != nil {
		return *p
	}
	return ""
}

// Claimed reports whether an open claim covers the API path ap: an
// operation of the daemon is changing it now (the start-up sweep spares
// such a temp file).
func (w *Watch) Claimed(ap string) bool {
	covered, _ := w.ledger.claimed(ap, "")
	return covered
}
