package quota

import (
	"context"
	"time"

	"golang.org/x/sys/unix"
)

// Intervals are how often the counts are corrected (doc.go, "The scan").
type Intervals struct {
	Every time.Duration // the regular scan
	Soon  time.Duration // the scan after an outside change
}

// DefaultIntervals are a sandbox's unless set otherwise.
var DefaultIntervals = Intervals{Every: 5 * time.Minute, Soon: 2 * time.Second}

// scanBackoff is how many times the last walk's time a sooner scan waits
// at least.
const scanBackoff = 20

// SetIntervals sets how often the scans run, from the next one set.
func (s *State) SetIntervals(iv Intervals) {
	s.every.Store(int64(iv.Every))
	s.soon.Store(int64(iv.Soon))
}

// Dirty reports that an outside change waits to be counted by a scan.
func (s *State) Dirty() bool { return s.dirty.Load() }

// Scan walks the tree and sets the usage counts from it (doc.go, "The
// scan"). It returns the usage after.
func (s *State) Scan(ctx context.Context) (Usage, error) {
	s.scanning.Lock()
	defer s.scanning.Unlock()
	wasDirty := s.dirty.Swap(false)
	for try := 0; ; try++ {
		g0 := s.gen.Load()
		if s.inflight.Load() == 0 && !s.passthroughWriters() {
			w, err := s.walk(ctx)
			if err != nil {
				if wasDirty {
					s.dirty.Store(true) // Store(Load()||…) could lose an outside change told in between
				}
				return s.Usage(), err
			}
			b, e := s.usedBytes.Load(), s.usedEntries.Load()
			quiet := s.gen.Load() == g0 && s.inflight.Load() == 0 && !s.passthroughWriters()
			if quiet || (try >= 4 && wasDirty) {
				s.usedBytes.Add(w.Bytes - b)
				s.usedEntries.Add(w.Entries - e)
				s.scanned.Store(time.Now().UnixNano())
				if !quiet {
					s.dirty.Store(true) // taken on a busy tree: look again soon
				}
				return s.Usage(), nil
			}
		}
		if try >= 4 {
			if wasDirty {
				s.dirty.Store(true)
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

// walk counts the whole tree but the root, on a dup of the root.
func (s *State) walk(ctx context.Context) (Count, error) {
	s.scanMu.Lock()
	if s.stopped {
		s.scanMu.Unlock()
		return Count{}, unix.EBADF
	}
	fd, err := s.tree.Open()
	s.scanMu.Unlock()
	if err != nil {
		return Count{}, err
	}
	start := time.Now()
	u, err := s.tree.Count(ctx, fd)
	s.walkTook.Store(int64(time.Since(start)))
	return u, err
}

// OutsideChange marks the counts for a sooner rescan: something changed
// the tree by an amount nobody counted.
func (s *State) OutsideChange() {
	if s.dirty.Swap(true) {
		return // already marked
	}
	s.schedule(time.Duration(s.soon.Load()), true)
}

// MayCopyUp tells a change made without an Op (a change of attributes,
// an open for writing) that on an Approx tree may have copied a file up:
// a chmod of a fork's lower file makes it an entry of the upper. It marks
// the counts there as an Op's end does; elsewhere it does nothing.
func (s *State) MayCopyUp() {
	if s.tree.Approx {
		s.OutsideChange()
	}
}

// schedule sets the next scan in d (a sooner one is not put off). A
// sooner scan waits at least scanBackoff times what the last walk took,
// so a tree that outside writers keep changing is not walked back to back.
func (s *State) schedule(d time.Duration, soon bool) {
	if soon {
		d = max(d, scanBackoff*time.Duration(s.walkTook.Load()))
	}
	s.scanMu.Lock()
	defer s.scanMu.Unlock()
	if s.stopped {
		return
	}
	if s.timer != nil {
		if s.timerSoon && !soon {
			return
		}
		s.timer.Stop()
	}
	s.timerSoon = soon
	s.timer = time.AfterFunc(d, s.tick)
}

// tick is the timer's scan, which sets the next one.
func (s *State) tick() {
	s.scanMu.Lock()
	s.timer = nil
	stopped := s.stopped
	s.scanMu.Unlock()
	if stopped {
		return
	}
	s.Scan(context.Background())
	s.ScheduleNext()
}

// ScheduleNext sets the scan after one: soon when the usage is dirty (an
// outside change it could not account), else the regular one.
func (s *State) ScheduleNext() {
	if s.dirty.Load() {
		s.schedule(time.Duration(s.soon.Load()), true)
	} else {
		s.schedule(time.Duration(s.every.Load()), false)
	}
}

// Stop ends the scans: none starts a walk after it returns, so the
// sandbox may close its root.
func (s *State) Stop() {
	s.scanMu.Lock()
	defer s.scanMu.Unlock()
	s.stopped = true
	if s.timer != nil {
		s.timer.Stop()
		s.timer = nil
	}
}

// passthroughWriters reports whether the mirror has a file open for
// writing that may write in passthrough (no byte quota), whose writes the
// daemon counts only at the flush.
func (s *State) passthroughWriters() bool {
	if s.bytes.Load() > 0 {
		return false
	}
	o := &s.open
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.m) > 0
}
