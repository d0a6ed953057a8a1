package history

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// Open opens the durable journal in dir (made if missing, 0700), giving
// the database every whole event the tail holds that it lacks.
func Open(dir string, keep Retention, log *slog.Logger) (*Log, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("history: %s: %w", dir, err)
	}
	lock, err := unix.Openat(dfd, "lock", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err == nil {
		if err = unix.Flock(lock, unix.LOCK_EX|unix.LOCK_NB); err != nil {
			unix.Close(lock)
			if err == unix.EWOULDBLOCK {
				unix.Close(dfd)
				return nil, fmt.Errorf("the journal in %s is in use by another daemon (one daemon per state directory and sandbox)", dir)
			}
		}
	}
	if err != nil {
		unix.Close(dfd)
		return nil, fmt.Errorf("history: %s: %w", dir, err)
	}
	l := &Log{dir: dir, dfd: dfd, lock: lock, keep: keep, log: log, wake: make(chan struct{}, 1), urgent: make(chan struct{}, 1), done: make(chan struct{})}
	l.cond = sync.NewCond(&l.mu)
	if err := l.open(); err != nil {
		unix.Close(lock)
		unix.Close(dfd)
		return nil, err
	}
	go l.writer()
	return l, nil
}

func (l *Log) open() error {
	for _, name := range []string{"journal.db", "journal.db-wal", "journal.db-shm", "tail"} {
		var st unix.Stat_t
		if err := unix.Fstatat(l.dfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err == nil && st.Mode&unix.S_IFMT != unix.S_IFREG {
			return fmt.Errorf("history: %s/%s is not a regular file; refusing it", l.dir, name)
		}
	}
	var dbst unix.Stat_t
	dbKept := unix.Fstatat(l.dfd, "journal.db", &dbst, unix.AT_SYMLINK_NOFOLLOW) == nil
	d, oldest, newest, err := l.openStore()
	if err != nil {
		return err
	}
	var tst unix.Stat_t
	tailWhole := unix.Fstatat(l.dfd, "tail", &tst, unix.AT_SYMLINK_NOFOLLOW) == nil && tst.Size == tailSize
	t, err := openTail(l.dfd, "tail")
	if err != nil {
		d.close()
		return err
	}
	recs, end, clean := t.records()
	if !tailWhole && newest > 0 {
		end, clean = 0, false // removed or truncated: all of it may be gone
	}
	var lost []journal.Event
	for _, e := range recs {
		if e.Seq > newest {
			lost = append(lost, e)
		}
	}
	committed := newest
	if len(lost) > 0 {
		err := d.appendBatch(lost)
		switch {
		case err == nil:
			l.log.Info("recovered events from the journal's tail", "dir", l.dir, "count", len(lost), "through", lost[len(lost)-1].Seq)
			committed = lost[len(lost)-1].Seq
		case l.outOfSpace(err):
			// A start on a full state disk starts degraded, not refused:
			// the tail keeps holding what the database lacks.
			l.log.Error("journal: the state disk is full; the tail's events wait in it until they can be stored, and changes that grow the tree are refused meanwhile",
				"dir", l.dir, "count", len(lost), "err", err)
			l.pending, l.failed = lost, err
			l.full.Store(true)
		default:
			t.close()
			d.close()
			return fmt.Errorf("history: recovering the tail: %w", err)
		}
		newest = lost[len(lost)-1].Seq
		if oldest == 0 {
			oldest = lost[0].Seq
		}
	}
	m, err := openMark(l.dfd)
	if err != nil {
		t.close()
		d.close()
		return err
	}
	switch {
	case !clean:
		newest, err = l.skip(d, newest, newest+mostRecords(end), "the journal's tail was damaged (a power loss, a damaged disk, or a file removed or edited)")
	case newest == 0 && m.at > 0 && (!dbKept || !tailWhole):
		// Kept both (a prune never takes the newest event), the journal
		// numbered nothing yet: the mark is raised ahead at every open,
		// and is no sign of a loss then.
		newest, err = l.skip(d, 0, m.at, "the journal's database and tail are both gone (removed, or the database made anew)")
	}
	if err != nil {
		m.close()
		t.close()
		d.close()
		return err
	}
	if oldest == 0 {
		oldest = newest
	}
	if err := m.raise(markAhead(newest)); err != nil {
		l.log.Warn("journal: the seq mark could not be kept; a journal whose database and tail are both lost would number from 1", "dir", l.dir, "err", err)
	}
	if len(l.pending) == 0 {
		committed = newest
		t.reset()
		l.ballast = l.makeBallast()
	} else {
		t.pos = end // what the database lacks stays in the tail
	}
	t.release()
	t.last = newest
	l.db, l.tail, l.mark = d, t, m
	l.oldest, l.newest, l.committed = oldest, newest, committed
	if v, err := d.meta("manifest_seq"); err == nil && v != "" {
		l.prunable, _ = strconv.ParseUint(v, 10, 64)
	}
	return nil
}

// openStore opens journal.db and reads the seqs it holds. A database
// SQLite finds damaged there is set aside (journal.db.damaged-TIME, for a
// person to look at) and a new one made: the history it held is lost, and
// the numbering goes on above what was handed out (the tail and the mark).
func (l *Log) openStore() (d *db, oldest, newest uint64, err error) {
	d, oldest, newest, err = l.tryStore()
	if err == nil || !damagedErr(err) {
		return d, oldest, newest, err
	}
	suffix := ".damaged-" + time.Now().UTC().Format("20060102T150405Z")
	for _, name := range []string{"journal.db", "journal.db-wal", "journal.db-shm"} {
		if err := unix.Renameat(l.dfd, name, l.dfd, name+suffix); err != nil && err != unix.ENOENT {
			return nil, 0, 0, fmt.Errorf("history: setting the damaged %s aside: %w", name, err)
		}
	}
	l.log.Error("journal: the database was damaged; it is set aside and a new one made: the history it held is lost, and numbering goes on above every seq handed out",
		"dir", l.dir, "set_aside", "journal.db"+suffix, "err", err)
	return l.tryStore()
}

// tryStore opens journal.db (made 0600 first: its -wal and -shm files
// take the database's mode) and reads its bounds.
func (l *Log) tryStore() (*db, uint64, uint64, error) {
	if fd, err := unix.Openat(l.dfd, "journal.db", unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600); err == nil {
		unix.Close(fd)
	}
	dbPath := "/proc/self/fd/" + strconv.Itoa(l.dfd) + "/journal.db"
	d, err := openDB(dbPath)
	if err != nil && l.diskFull() && l.dropBallast() { // ballast.go
		l.log.Warn("journal: the state disk is full; its ballast was removed so that the journal could open", "dir", l.dir)
		d, err = openDB(dbPath)
	}
	if err != nil {
		return nil, 0, 0, err
	}
	oldest, newest, err := d.bounds()
	if err != nil {
		d.close()
		return nil, 0, 0, fmt.Errorf("history: %w", err)
	}
	return d, oldest, newest, nil
}

// skip: events after newest, up to ceiling, may have been handed out
// (watchers, the fleet's stream) and are gone (why), so their numbers are
// never used again: the numbering goes on above ceiling, every number they
// could have had, where a loss marker stands for them (a scan across it,
// and so a cursor before it, is told overflow). Said once in the log.
func (l *Log) skip(d *db, newest, ceiling uint64, why string) (uint64, error) {
	marker := journal.Event{Seq: ceiling, Time: time.Now(), Path: "/"}
	if err := d.appendBatch([]journal.Event{marker}); err != nil {
		if !l.outOfSpace(err) {
			return 0, fmt.Errorf("history: marking the events that were lost: %w", err)
		}
		l.pending, l.failed = append(l.pending, marker), err // stored with the rest
		l.full.Store(true)
	}
	l.log.Error(why+": events after it may be lost; they are told as lost and never numbered again",
		"dir", l.dir, "kept_through", newest, "numbering_from", ceiling+1)
	return ceiling, nil
}
