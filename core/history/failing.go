package history

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// Failing is the writer's last error while the database refuses events
// (nil once a batch is stored again), and whether it is for want of space
// (full): SQLite's "database or disk is full", ENOSPC or EDQUOT. Meanwhile the
// tail and memory keep what was appended; the writer retries every second,
// and the first batch stored ends it.
func (l *Log) Failing() (full bool, err error) {
	l.mu.Lock()
	err = l.failed
	l.mu.Unlock()
	return l.full.Load(), err
}

// sqliteFull is SQLite's primary result code SQLITE_FULL.
const sqliteFull = 13

// sqliteBusy and sqliteLocked are SQLite's primary result codes of a
// database another connection holds past the busy timeout: the writer's
// next try may well pass.
const (
	sqliteBusy   = 5
	sqliteLocked = 6
)

// busyErr reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED.
func busyErr(err error) bool {
	var coded interface{ Code() int }
	return errors.As(err, &coded) && (coded.Code()&0xff == sqliteBusy || coded.Code()&0xff == sqliteLocked)
}

// busyPatience is how long a reader waiting for events to be stored waits
// out a writer refused as busy before it answers that the database is
// unavailable: a moment's lock (a long prune beside it) is no failure.
const busyPatience = 30 * time.Second

// outOfSpace reports whether err is a refusal for want of space: a
// write's SQLITE_FULL or ENOSPC/EDQUOT, or any error of SQLite's while the
// disk is full (its shared memory file that cannot grow is an I/O error).
func (l *Log) outOfSpace(err error) bool {
	return outOfSpaceErr(err) || l.diskFull()
}

func outOfSpaceErr(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) && coded.Code()&0xff == sqliteFull {
		return true
	}
	return errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EDQUOT)
}

// Full reports whether the database refuses events for want of space, at
// the cost of an atomic load (a write asks it for every block).
func (l *Log) Full() bool { return l.full.Load() }

// SQLite's primary result codes for a damaged database: SQLITE_CORRUPT and
// SQLITE_NOTADB.
const (
	sqliteCorrupt = 11
	sqliteNotADB  = 26
)

// unavailable is err as a reader of the journal gets it: one that says the
// database could not answer (journal.ErrStoreUnavailable, with why), never
// a bare I/O error; a damaged database is remembered for Damaged. A
// context's end is passed as it is.
func (l *Log) unavailable(err error) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, journal.ErrStoreUnavailable) {
		return err
	}
	if damagedErr(err) && l.damaged.CompareAndSwap(nil, &err) {
		l.log.Error("journal: the database is damaged; reads of the history fail until the next start, which sets it aside if it finds the damage (or remove journal.db with the daemon stopped: numbering goes on above what was handed out)", "dir", l.dir, "err", err)
	}
	return fmt.Errorf("%w: %v", journal.ErrStoreUnavailable, err)
}

// Damaged is the error by which SQLite found the database damaged, nil
// while none was found.
func (l *Log) Damaged() error {
	if p := l.damaged.Load(); p != nil {
		return *p
	}
	return nil
}

// damagedErr reports whether err is SQLite finding the database damaged.
func damagedErr(err error) bool {
	var coded interface{ Code() int }
	if !errors.As(err, &coded) {
		return false
	}
	c := coded.Code() & 0xff
	return c == sqliteCorrupt || c == sqliteNotADB
}

// Removed reports whether the state directory was found removed (its link
// count 0): the writer checks it every second, and at each failure.
func (l *Log) Removed() bool { return l.removed.Load() }

// checkRemoved notes, and says once, that the state directory was removed
// under the daemon: what the journal stores goes to unlinked files then,
// gone at the next start.
func (l *Log) checkRemoved() {
	if l.removed.Load() {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(l.dfd, &st) != nil || st.Nlink > 0 {
		return
	}
	l.removed.Store(true)
	l.log.Error("journal: the state directory was removed while the daemon runs; changes that grow the tree are refused, and a restart makes the state anew",
		"dir", l.dir)
}

// maxPendingFailing bounds the events kept in memory while the database
// refuses them (a full disk with an outside writer still writing): about
// 60 MiB (a variable: a test makes it small).
var maxPendingFailing = 1 << 18

// dropPending gives up the events pending while the database refuses
// them, past maxPendingFailing: one loss marker, at the last one's seq,
// stands for them, so a scan across them (and a cursor before them) is
// told lost, never a silent gap. The journal's memory still serves its
// recent events to watchers. Said once in the log. The lock is held.
func (l *Log) dropPending() {
	last := l.pending[len(l.pending)-1]
	if !l.dropped {
		l.log.Error("journal: events could not be stored for too long (the state disk full?); those waiting are dropped and told as lost",
			"dir", l.dir, "count", len(l.pending), "through", last.Seq, "err", l.failed)
		l.dropped = true
	}
	clear(l.pending)
	l.pending = append(l.pending[:0], journal.Event{Seq: last.Seq, Time: last.Time, Path: "/"})
}
