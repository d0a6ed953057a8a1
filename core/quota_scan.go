package core

import (
	"context"
	"os"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// # The scan
//
// The counts the operations keep are exact for what goes through the
// daemon; a scan (a walk of the whole tree by fd, never following a
// symlink) corrects them for the rest. It runs after the start-up sweep,
// every scanEvery after that, and scanSoon after an outside change whose
// size nobody knows (what inotify tells, origin external; a restore). A
// walk is trusted only if no usageOp began or ended while it ran
// (quotaState.gen and inflight, read before and after it); on a busy
// sandbox it tries again, a few times, and then, if an outside change
// waits to be counted, takes the walk as it is and keeps the sooner rescan.
// The counts are set by adding the walk's difference from what they were
// when it ended, so a usageOp that begins after that check is kept. The
// first scan counts as after an outside change (nothing is counted yet),
// and until it ends a change to a bounded sandbox waits (usageBegin). A
// sooner scan waits at least scanBackoff times the last walk.
//
// Without a byte quota the mirror may write in passthrough, counted at the
// handle's flush; a walk while such a handle is open is not trusted either
// (passthroughWriters), since the flush would count again what it saw. A
// scan taken anyway (an outside change waiting, a busy tree) may then be
// off by those writes until the next one.

// Intervals of the scan, in nanoseconds (atomic for tests).
var scanEvery, scanSoon atomic.Int64

func init() {
	scanEvery.Store(int64(5 * time.Minute))
	scanSoon.Store(int64(2 * time.Second))
}

// scanBackoff is how many times the last walk's time a sooner scan waits
// at least.
const scanBackoff = 20

// usageCount is what a subtree holds.
type usageCount struct{ bytes, entries int64 }

func (u *usageCount) add(v usageCount) { u.bytes += v.bytes; u.entries += v.entries }

// measurer walks subtrees by fd and counts them the way usage does: each
// regular file's inode once (seen holds the inodes with more than one
// link met so far).
type measurer struct {
	ctx  context.Context
	seen map[inoKey]bool
}

func newMeasurer(ctx context.Context) *measurer { return &measurer{ctx: ctx} }

// entry counts name in dirfd (described by st when not nil) and all under it.
func (m *measurer) entry(dirfd int, name string, st *unix.Stat_t) (usageCount, error) {
	var own unix.Stat_t
	if st == nil {
		if _, err := lstatAt(dirfd, name, &own); err != nil {
			return usageCount{}, err
		}
		st = &own
	}
	u := usageCount{entries: 1}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		u.bytes = m.file(st)
	case unix.S_IFDIR:
		fd, err := openSubdir(dirfd, name)
		if err == unix.EXDEV {
			return u, nil // another mount: not the root's (xdev.go)
		}
		if err != nil {
			return u, err
		}
		in, err := m.dir(fd)
		u.add(in)
		return u, err
	}
	return u, nil
}

// file is what the regular file of stat st adds: its size, once per inode.
func (m *measurer) file(st *unix.Stat_t) int64 {
	if st.Nlink <= 1 {
		return st.Size
	}
	k := inoKey{uint64(st.Dev), st.Ino}
	if m.seen[k] {
		return 0
	}
	if m.seen == nil {
		m.seen = map[inoKey]bool{}
	}
	m.seen[k] = true
	return st.Size
}

// dir counts the entries under the open directory fd (not itself), and
// closes fd.
func (m *measurer) dir(fd int) (usageCount, error) {
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	var u usageCount
	for {
		if err := m.ctx.Err(); err != nil {
			return u, err
		}
		names, err := f.Readdirnames(256)
		for _, n := range names {
			v, err := m.entry(fd, n, nil)
			if err == unix.ENOENT {
				continue // gone meanwhile
			}
			u.add(v)
			if err != nil && err != unix.EACCES {
				return u, err
			}
		}
		if err != nil {
			return u, nil // io.EOF: done
		}
	}
}

// measureAt counts name in dirfd and all under it.
func (s *Sandbox) measureAt(ctx context.Context, dirfd int, name string) usageCount {
	u, _ := newMeasurer(ctx).entry(dirfd, name, nil)
	return u
}

// ScanUsage walks the tree and sets the usage counts from it (see "The
// scan"). It returns the usage after.
func (s *Sandbox) ScanUsage(ctx context.Context) (Usage, error) {
	q := &s.quota
	q.scanning.Lock()
	defer q.scanning.Unlock()
	wasDirty := q.dirty.Swap(false)
	for try := 0; ; try++ {
		g0 := q.gen.Load()
		if q.inflight.Load() == 0 && !s.passthroughWriters() {
			w, err := s.walkUsage(ctx)
			if err != nil {
				if wasDirty {
					q.dirty.Store(true) // Store(Load()||…) could lose an outside change told in between
				}
				return s.Usage(), err
			}
			b, e := q.usedBytes.Load(), q.usedEntries.Load()
			quiet := q.gen.Load() == g0 && q.inflight.Load() == 0 && !s.passthroughWriters()
			if quiet || (try >= 4 && wasDirty) {
				q.usedBytes.Add(w.bytes - b)
				q.usedEntries.Add(w.entries - e)
				q.scanned.Store(time.Now().UnixNano())
				if !quiet {
					q.dirty.Store(true) // taken on a busy tree: look again soon
				}
				return s.Usage(), nil
			}
		}
		if try >= 4 {
			if wasDirty {
				q.dirty.Store(true)
			}
			return s.Usage(), nil // busy and nothing to correct: the counts stand
		}
		select {
		case <-ctx.Done():
			return s.Usage(), ctx.Err()
		case <-time.After(time.Duration(try+1) * 20 * time.Millisecond):
		}
	}
}

// walkUsage counts the whole tree but the root, on a dup of the root fd.
func (s *Sandbox) walkUsage(ctx context.Context) (usageCount, error) {
	s.quota.scanMu.Lock()
	if s.closed.Load() {
		s.quota.scanMu.Unlock()
		return usageCount{}, unix.EBADF
	}
	fd, err := unix.Openat(s.root, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	s.quota.scanMu.Unlock()
	if err != nil {
		return usageCount{}, err
	}
	start := time.Now()
	u, err := newMeasurer(ctx).dir(fd)
	s.quota.walkTook.Store(int64(time.Since(start)))
	return u, err
}

// outsideChange marks the counts for a sooner rescan: something changed
// the tree by an amount nobody counted.
func (s *Sandbox) outsideChange() {
	if s.quota.dirty.Swap(true) {
		return // already marked
	}
	s.scheduleScan(time.Duration(scanSoon.Load()), true)
}

// scheduleScan sets the next scan in d (a sooner one is not put off).
// A sooner scan waits at least scanBackoff times what the last walk took,
// so a tree that outside writers keep changing is not walked back to back.
func (s *Sandbox) scheduleScan(d time.Duration, soon bool) {
	q := &s.quota
	if soon {
		d = max(d, scanBackoff*time.Duration(q.walkTook.Load()))
	}
	q.scanMu.Lock()
	defer q.scanMu.Unlock()
	if s.closed.Load() {
		return
	}
	if q.timer != nil {
		if q.soon && !soon {
			return
		}
		q.timer.Stop()
	}
	q.soon = soon
	q.timer = time.AfterFunc(d, s.scanTick)
}

// scanTick is the timer's scan, which sets the next one.
func (s *Sandbox) scanTick() {
	s.quota.scanMu.Lock()
	s.quota.timer = nil
	s.quota.scanMu.Unlock()
	if s.closed.Load() {
		return
	}
	s.ScanUsage(context.Background())
	s.scheduleNextScan()
}

// scheduleNextScan sets the scan after one: soon when the usage is dirty
// (an outside change it could not account), else the regular one.
func (s *Sandbox) scheduleNextScan() {
	if s.quota.dirty.Load() {
		s.scheduleScan(time.Duration(scanSoon.Load()), true)
	} else {
		s.scheduleScan(time.Duration(scanEvery.Load()), false)
	}
}

// stopScans ends the scan timer (Close).
func (s *Sandbox) stopScans() {
	s.quota.scanMu.Lock()
	defer s.quota.scanMu.Unlock()
	if s.quota.timer != nil {
		s.quota.timer.Stop()
		s.quota.timer = nil
	}
}

// passthroughWriters reports whether the mirror has a file open for
// writing that may write in passthrough (no byte quota), whose writes the
// daemon counts only at the flush.
func (s *Sandbox) passthroughWriters() bool {
	if s.quota.bytes.Load() > 0 {
		return false
	}
	o := &s.quota.open
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.m) > 0
}
