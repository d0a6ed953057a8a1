package history

import (
	"fmt"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The mark is a number no seq handed out has reached, kept in a file of its
// own ("seqmark") beside the database and the tail. A journal whose
// database and tail are both gone (removed by hand, or a database made
// anew beside a lost tail) numbers on from it, so a seq a watcher or the
// fleet was given is never given again. It is raised ahead of the
// numbering, a tail's worth of records at a time: the writer raises it
// after a commit once the numbers handed out could come within a tail of
// it (an Append waits for the database before the tail starts over, so no
// seq gets more than a tail's records past what was committed). So it is
// written, and synced, about once per million events.
type mark struct {
	fd int
	at uint64 // every seq handed out is below it
}

// markWidth is the file's fixed size: twenty digits and a newline, written
// in place, so a kill never leaves it shorter.
const markWidth = 21

func openMark(dirfd int) (*mark, error) {
	fd, err := unix.Openat(dirfd, "seqmark", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("history: seqmark: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("history: seqmark is not a regular file; refusing it")
	}
	m := &mark{fd: fd}
	buf := make([]byte, markWidth)
	if n, _ := unix.Pread(fd, buf, 0); n > 0 {
		// A mark that does not read as a number is as good as none: the
		// database and the tail still number on from what they hold.
		m.at, _ = strconv.ParseUint(strings.TrimSpace(string(buf[:n])), 10, 64)
	}
	return m, nil
}

// raise makes the mark at least to, on disk before it returns.
func (m *mark) raise(to uint64) error {
	if to <= m.at {
		return nil
	}
	b := fmt.Appendf(nil, "%020d\n", to)
	if _, err := unix.Pwrite(m.fd, b, 0); err != nil {
		return fmt.Errorf("history: raising seqmark: %w", err)
	}
	if err := unix.Fdatasync(m.fd); err != nil {
		return fmt.Errorf("history: syncing seqmark: %w", err)
	}
	m.at = to
	return nil
}

// ahead is where the mark is raised to when the numbering reaches within a
// tail's records of it.
func markAhead(committed uint64) uint64 { return committed + 2*mostRecords(0) }

// due reports whether the numbering, committed through seq, may come within
// a tail's records of the mark.
func (m *mark) due(committed uint64) bool { return committed+mostRecords(0) >= m.at }

func (m *mark) close() { unix.Close(m.fd) }

// raiseMark raises the mark when the numbering, committed through seq,
// comes near it. A mark that cannot be written is said once; the journal
// goes on (only a loss of both the database and the tail needs it).
func (l *Log) raiseMark(committed uint64) {
	if !l.mark.due(committed) {
		return
	}
	if err := l.mark.raise(markAhead(committed)); err != nil && !l.markFailed {
		l.log.Warn("journal: the seq mark could not be raised", "dir", l.dir, "err", err)
		l.markFailed = true
	}
}
