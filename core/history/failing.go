package history

import (
	"errors"

	"golang.org/x/sys/unix"
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
