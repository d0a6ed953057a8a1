package core

import (
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The ledger is how a change made by core (or the mirror) is told once: the
// operation opens a claim on the paths it is about to touch before its first
// syscall, and when it is done it drops a sentinel file named for the claim
// in a private control directory that the same inotify instance watches.
// inotify queues events in the order they happen, so every echo of the
// operation reaches the reader before the sentinel does: the reader drops
// events on claimed paths while the claim is open and closes the claim when
// it reads the sentinel. A sentinel is a hard link to one file, so it makes
// a name but no inode. No time window is involved, so an outside write
// that lands right after an API write of the same file is still told.
type ledger struct {
	mu     sync.Mutex
	next   uint64
	open   map[uint64]*Claim
	ctlDir atomic.Pointer[string] // nil while no kernel watch runs: claims close at once
	spent  []string               // sentinels read, not yet removed (the reader's alone)
}

// Claim is one operation's hold on the echoes of its changes.
type Claim struct {
	l     *ledger
	id    uint64
	paths []string // API paths; each covers its subtree
}

// Claim opens a claim on the given API paths (each with everything under
// it). Add more with Add; Done must be called when the changes are made.
func (s *Sandbox) Claim(paths ...string) *Claim {
	l := &s.ledger
	l.mu.Lock()
	defer l.mu.Unlock()
	l.next++
	c := &Claim{l: l, id: l.next, paths: append([]string(nil), paths...)}
	if l.open == nil {
		l.open = map[uint64]*Claim{}
	}
	l.open[c.id] = c
	return c
}

// Add extends the claim to more paths.
func (c *Claim) Add(paths ...string) {
	c.l.mu.Lock()
	c.paths = append(c.paths, paths...)
	c.l.mu.Unlock()
}

// Done ends the operation: its echoes are claimed until the reader meets the
// sentinel. Done twice is harmless.
func (c *Claim) Done() {
	l := c.l
	l.mu.Lock()
	dir := l.dir()
	if _, ok := l.open[c.id]; !ok {
		l.mu.Unlock()
		return
	}
	if dir == "" {
		delete(l.open, c.id)
		l.mu.Unlock()
		return
	}
	l.mu.Unlock()
	// A hard link to the control directory's one file: a new name (the
	// IN_CREATE the reader waits for) without a new inode, which on ext4
	// costs as much as the operation being claimed.
	if err := unix.Link(filepath.Join(dir, sentinelBase), filepath.Join(dir, strconv.FormatUint(c.id, 10))); err != nil {
		l.close(c.id) // no sentinel: better a duplicate event than a lost one
	}
}

// sentinelBase is the file in the control directory every sentinel links to.
const sentinelBase = "base"

func (l *ledger) close(id uint64) {
	l.mu.Lock()
	delete(l.open, id)
	l.mu.Unlock()
}

// claimed reports whether an open claim covers API path p.
func (l *ledger) claimed(p string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.open {
		for _, cp := range c.paths {
			if p == cp || isUnder(p, cp) || cp == "/" {
				return true
			}
		}
	}
	return false
}

// sentinel handles a file appearing in the control directory: the claim it
// names is over. Only the reader calls it.
func (l *ledger) sentinel(name string) {
	id, err := strconv.ParseUint(name, 10, 64)
	if err != nil {
		return // the base file
	}
	l.close(id)
	// Spent sentinels are removed a batch at a time: one at a time, each
	// removal's own event woke the reader once more per claimed operation.
	l.spent = append(l.spent, name)
	if len(l.spent) < spentBatch {
		return
	}
	dir := l.dir()
	for _, n := range l.spent {
		if dir != "" {
			os.Remove(filepath.Join(dir, n))
		}
	}
	l.spent = l.spent[:0]
}

// spentBatch is how many spent sentinels wait for removal (links to one
// inode: they cost a directory entry each, and the directory goes with the
// watch).
const spentBatch = 256

// setCtlDir starts (dir) or stops ("") closing claims by sentinel; the
// directory must be empty and watched by the reader.
func (l *ledger) setCtlDir(dir string) error {
	if dir != "" {
		fd, err := unix.Open(filepath.Join(dir, sentinelBase), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		unix.Close(fd)
	}
	if dir == "" {
		l.ctlDir.Store(nil)
	} else {
		l.ctlDir.Store(&dir)
	}
	return nil
}

// dir is the control directory, "" while no kernel watch runs. It is read
// without the ledger's lock: the mirror asks (through Watching) at every
// lookup it may let the kernel cache.
func (l *ledger) dir() string {
	if p := l.ctlDir.Load(); p != nil {
		return *p
	}
	return ""
}

// ctlParent is where the control directory goes: a tmpfs (/dev/shm) where
// there is one, so a sentinel is a name in memory and not a journaled
// change on the disk the root may share, else the temp directory.
func ctlParent() string {
	var st unix.Statfs_t
	if unix.Statfs("/dev/shm", &st) == nil && st.Type == unix.TMPFS_MAGIC && unix.Access("/dev/shm", unix.W_OK) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}
