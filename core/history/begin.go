package history

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// Begin makes a new journal in dir that numbers on after seq: the events
// through seq are another journal's (the sandbox's on the host it was
// taken up from), so one loss marker stands for them at seq, and a cursor
// before it is told overflow, never a gap. A seq mark already in dir (a
// sandbox of the name before, whose state was archived) is kept to: the
// numbering goes on above the higher of the two. A dir that holds a
// journal already is refused.
func Begin(dir string, seq uint64, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("history: %s: %w", dir, err)
	}
	defer unix.Close(dfd)
	for _, name := range []string{"journal.db", "tail"} {
		var st unix.Stat_t
		if unix.Fstatat(dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			return fmt.Errorf("history: %s holds a journal already", dir)
		}
	}
	m, err := openMark(dfd)
	if err != nil {
		return err
	}
	seq = max(seq, m.at)
	m.close()
	// The marker below stands for every seq the mark covered: the mark
	// itself would make Open tell them lost a second time.
	if err := unix.Unlinkat(dfd, "seqmark", 0); err != nil {
		return fmt.Errorf("history: %w", err)
	}
	l, err := Open(dir, Retention{}, log)
	if err != nil {
		return err
	}
	if n := l.Newest(); n != 0 {
		l.Close()
		return fmt.Errorf("history: %s holds a journal already (through seq %d)", dir, n)
	}
	if _, err := numberAbove(l, seq); err != nil {
		l.Close()
		return err
	}
	return l.Close()
}

// numberAbove has the journal on l number on above seq, as
// journal.NumberAbove does (one loss marker at seq), and answers the seq
// it numbers after.
func numberAbove(l *Log, seq uint64) (uint64, error) {
	j, err := journal.NewWith(l)
	if err != nil {
		return 0, err
	}
	n, _ := j.NumberAbove(seq, j.Seq()) // nothing else appends: at holds
	return n, nil
}

// NumberAbove makes the journal in dir (not open) number on above seq:
// the events after its newest through seq were another journal's (the
// sandbox served on another host meanwhile, and taken up again here on
// the state it left), so one loss marker stands for them at seq, and a
// cursor before it is told overflow; a cursor at seq reads on. A journal
// already past seq is left as it is. It answers the seq the journal
// numbers after. Each meta key of cursors (a publisher's) is set to that
// seq: nothing this journal numbered up to it is handed on, neither the
// marker nor what it journaled while the sandbox was served elsewhere
// (its own events, numbered as the other host's were).
func NumberAbove(dir string, seq uint64, log *slog.Logger, cursors ...string) (uint64, error) {
	l, err := Open(dir, Retention{}, log)
	if err != nil {
		return 0, err
	}
	n, err := numberAbove(l, seq)
	if err != nil {
		l.Close()
		return 0, err
	}
	for _, k := range cursors {
		if err := l.SetMeta(k, strconv.FormatUint(n, 10)); err != nil {
			l.Close()
			return 0, err
		}
	}
	if err := l.Close(); err != nil {
		return 0, err
	}
	return n, nil
}
