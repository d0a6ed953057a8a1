package history

import "time"

// prune deletes the oldest events past the retention bounds, in the
// writer's goroutine, never past the manifest's seq.
func (l *Log) prune() {
	l.mu.Lock()
	newest, limit := l.committed, l.prunable
	l.mu.Unlock()
	var cut uint64
	if n := l.keep.MaxEvents; n > 0 && newest > uint64(n) {
		cut = newest - uint64(n)
	}
	if l.keep.MaxAge > 0 {
		if s, err := l.db.seqBefore(time.Now().Add(-l.keep.MaxAge)); err == nil && s > cut {
			cut = s
		}
	}
	if l.keep.MaxBytes > 0 {
		if sz, err := l.db.size(); err == nil && sz > l.keep.MaxBytes {
			// Over by size: drop the oldest tenth (or the share it is over).
			frac := max(0.1, 1-float64(l.keep.MaxBytes)/float64(sz))
			if s, err := l.db.seqAtFraction(frac); err == nil && s > cut {
				cut = s
			}
		}
	}
	// Never the newest event: the database keeps the numbering's high
	// point, so an empty one at the next open is one that numbered
	// nothing (open.go), not one pruned bare.
	cut = min(cut, limit, newest-min(newest, 1))
	l.mu.Lock()
	oldest := l.oldest
	l.mu.Unlock()
	if cut == 0 || cut < oldest {
		return
	}
	n, err := l.db.pruneThrough(cut)
	if err != nil {
		l.log.Error("journal: pruning", "dir", l.dir, "err", err)
		return
	}
	lo, _, err := l.db.bounds()
	if err != nil {
		return
	}
	l.mu.Lock()
	if lo == 0 {
		lo = cut + 1
	}
	l.oldest = lo
	l.mu.Unlock()
	if n > 0 {
		l.log.Debug("journal: pruned", "dir", l.dir, "events", n, "through", cut)
	}
}

// Prune runs a prune now (tests, and the operator's debug route).
func (l *Log) Prune() error {
	if err := l.Sync(); err != nil {
		return err
	}
	l.prune()
	return nil
}
