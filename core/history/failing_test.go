package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/internal/testenv"
)

// The journal when its disk is full, its files damaged or gone.

// TestFullStateDisk: a full state filesystem never kills the daemon: the
// tail's blocks are reserved at open, so writing events into it after the
// disk filled takes no block (a store into an unbacked page of a shared
// mapping is SIGBUS), and the database's failures are errors.
func TestFullStateDisk(t *testing.T) {
	dir := testenv.Tmpfs(t, "size=40m")
	l, j := openJournal(t, dir, Retention{})
	testenv.Fill(t, dir)
	for i := 1; i <= 20000; i++ { // about 2 MiB of the tail, past what a sparse file had backed
		j.Append(sample(i))
	}
	if j.Seq() != 20000 {
		t.Fatalf("seq %d, want 20000", j.Seq())
	}
	l.Close()
}

// TestStartOnFullStateDisk: a journal opened on a full state disk, with
// more events in its tail than the database has room for (a daemon killed
// before its writer stored them), starts degraded instead of refusing: it
// numbers on, reports itself full, and stores everything once space
// returns.
func TestStartOnFullStateDisk(t *testing.T) {
	dir := testenv.Tmpfs(t, "size=64m") // the tail takes 32 MiB; the database needs room for 4 MiB of events
	l, _ := openJournal(t, dir, Retention{})
	l.Close()
	// The tail as a kill leaves it: records the database lacks, past what
	// the ballast's room can store.
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	must(t, err)
	defer unix.Close(dfd)
	tl, err := openTail(dfd, "tail")
	must(t, err)
	n := 0
	for written := 0; written < 4*ballastSize; n++ {
		e := sample(n + 1)
		e.Seq = uint64(n + 1)
		if !tl.fits(e) {
			t.Fatal("no room in the tail")
		}
		tl.write(e.Seq)
		written += len(tl.buf)
	}
	tl.close()
	filler := testenv.Fill(t, dir)
	l, j := openJournal(t, dir, Retention{})
	defer l.Close()
	if full, err := l.Failing(); !full {
		t.Fatalf("opened on a full disk with %d events to store: full %v, err %v", n, full, err)
	}
	if j.Seq() != uint64(n) {
		t.Fatalf("seq %d after the degraded start, want %d", j.Seq(), n)
	}
	if e := j.Append(sample(n + 1)); e.Seq != uint64(n+1) {
		t.Fatalf("the next event got seq %d, want %d", e.Seq, n+1)
	}
	must(t, os.Remove(filler))
	waitStoring(t, l)
	must(t, l.Sync())
	got, lost := scanAll(t, j, 0)
	if len(got) != n+1 || lost || got[n].Path != sample(n+1).Path {
		t.Fatalf("after space returned: %d events (lost %v), want %d", len(got), lost, n+1)
	}
}

// TestPendingBoundedWhileFailing: while the database refuses events, the
// memory they wait in is bounded: past it they are dropped for one loss
// marker, so a scan across them says lost; what comes after is stored
// once space returns.
func TestPendingBoundedWhileFailing(t *testing.T) {
	defer func(f func(int) error, m int) { beforeCommit, maxPendingFailing = f, m }(beforeCommit, maxPendingFailing)
	maxPendingFailing = 1000
	var full atomic.Bool
	full.Store(true)
	beforeCommit = func(int) error {
		if full.Load() {
			return fmt.Errorf("insert: %w", unix.ENOSPC) // as a full disk fails it
		}
		return nil
	}
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{})
	j.Append(sample(1))
	if err := l.Sync(); err == nil {
		t.Fatal("a sync with every commit failing succeeded")
	}
	const n = 5000
	for i := 2; i <= n; i++ {
		j.Append(sample(i))
	}
	l.mu.Lock()
	pending := len(l.pending)
	l.mu.Unlock()
	if pending > maxPendingFailing+maxBatch {
		t.Errorf("%d events pending while failing, want at most %d", pending, maxPendingFailing+maxBatch)
	}
	full.Store(false)
	waitStoring(t, l)
	must(t, l.Sync())
	// The journal's memory still has them all; the store has the rest and
	// the loss marker, which a reopened journal reads back.
	l.Close()
	l, j = openJournal(t, dir, Retention{})
	defer l.Close()
	got, lost := scanAll(t, j, 0)
	if !lost || len(got) == 0 || len(got) >= n || got[len(got)-1].Path != sample(n).Path {
		t.Fatalf("after the drop: %d of %d events, lost %v; want fewer, lost, and the last one kept", len(got), n, lost)
	}
	if e := j.Append(sample(n + 1)); e.Seq != n+1 {
		t.Errorf("the next seq %d, want %d", e.Seq, n+1)
	}
}

// damagePages overwrites the middle fifth of dir's journal.db (never its
// first page, the header, nor its last), in place.
func damagePages(t *testing.T, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(dir, "journal.db"), os.O_RDWR, 0)
	must(t, err)
	defer f.Close()
	st, err := f.Stat()
	must(t, err)
	const page = 4096
	pages := int(st.Size()) / page
	if pages < 20 {
		t.Fatalf("journal.db has %d pages; the test needs more", pages)
	}
	junk := make([]byte, (pages*3/5-pages*2/5)*page)
	for i := range junk {
		junk[i] = byte(i*7 + 3)
	}
	_, err = f.WriteAt(junk, int64(pages*2/5*page))
	must(t, err)
}

// TestDamagedDatabase: a database SQLite finds damaged at open is set
// aside, kept for a person, and the numbering goes on above every seq
// handed out; one damaged while open fails a read across the damage with
// journal.ErrStoreUnavailable (never a bare I/O error), which Damaged then
// reports.
func TestDamagedDatabase(t *testing.T) {
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{})
	for i := 1; i <= 5000; i++ {
		j.Append(sample(i))
	}
	l.Close()
	// A second run: the tail (started over at the open) holds its 100.
	l, j = openJournal(t, dir, Retention{})
	for i := 5001; i <= 5100; i++ {
		j.Append(sample(i))
	}
	l.Close()
	damagePages(t, dir)
	l, j = openJournal(t, dir, Retention{})
	if j.Seq() < 5100 {
		t.Errorf("seq %d after the damaged database was set aside, want at least 5100", j.Seq())
	}
	got, lost := scanAll(t, j, 10)
	if !lost || len(got) != 100 || got[0].Path != sample(5001).Path {
		t.Errorf("from a cursor before the damage: %d events, lost %v; want the tail's 100 and lost", len(got), lost)
	}
	aside, _ := filepath.Glob(filepath.Join(dir, "journal.db.damaged-*"))
	if len(aside) == 0 {
		t.Errorf("the damaged database was not kept")
	}
	for i := 1; i <= 5000; i++ {
		j.Append(sample(i))
	}
	must(t, l.Sync())
	l.Close()

	l, _ = openJournal(t, dir, Retention{})
	defer l.Close()
	damagePages(t, dir)
	err := l.Scan(context.Background(), 0, l.Newest(), func(journal.Event) bool { return true })
	if !errors.Is(err, journal.ErrStoreUnavailable) {
		t.Fatalf("a scan across pages damaged while open: %v, want ErrStoreUnavailable", err)
	}
	if l.Damaged() == nil {
		t.Error("Damaged is nil after a read found the damage")
	}
}

// TestDatabaseAndTailGone: with the database and the tail both removed,
// the numbering goes on above every seq handed out, never from 1, and a
// cursor from before is told lost.
func TestDatabaseAndTailGone(t *testing.T) {
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{})
	for i := 1; i <= 10; i++ {
		j.Append(sample(i))
	}
	l.Close()
	for _, name := range []string{"journal.db", "journal.db-wal", "journal.db-shm", "tail"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	l, j = openJournal(t, dir, Retention{})
	defer l.Close()
	if j.Seq() <= 10 {
		t.Fatalf("seq %d after the database and tail were removed, want above 10", j.Seq())
	}
	if got, lost := scanAll(t, j, 10); len(got) != 0 || !lost {
		t.Errorf("from seq 10: %d events, lost %v; want none and lost", len(got), lost)
	}
	if e := j.Append(sample(11)); e.Seq <= 10 {
		t.Errorf("the next event got seq %d, a number handed out before", e.Seq)
	}
	// A fresh directory starts at 1.
	l2, j2 := openJournal(t, t.TempDir(), Retention{})
	defer l2.Close()
	if e := j2.Append(sample(1)); e.Seq != 1 {
		t.Errorf("a new journal's first seq is %d, want 1", e.Seq)
	}
}

// TestEmptyReopen: a journal that numbered nothing, closed and opened
// again with its database and tail, tells no loss: its mark, raised
// ahead at its first open, is no sign of lost events. Without its
// database it does, as the mark says seqs may have been handed out.
func TestEmptyReopen(t *testing.T) {
	dir := t.TempDir()
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	open := func() (*Log, *journal.Journal) { return openJournalLog(t, dir, Retention{}, log) }
	l, _ := open()
	l.Close()
	l, j := open()
	seq := j.Seq()
	l.Close()
	if strings.Contains(logs.String(), "level=ERROR") || seq != 0 {
		t.Errorf("an empty journal reopened: seq %d, log %q; want 0 and no error", seq, logs.String())
	}
	for _, name := range []string{"journal.db", "journal.db-wal", "journal.db-shm"} {
		if err := os.Remove(filepath.Join(dir, name)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	l, j = open()
	defer l.Close()
	if !strings.Contains(logs.String(), "both gone") || j.Seq() == 0 {
		t.Errorf("the database removed: seq %d, log %q; want the loss told and the numbering above the mark", j.Seq(), logs.String())
	}
}

// TestMarkRaised: the writer keeps the mark a tail's records ahead of what
// it committed.
func TestMarkRaised(t *testing.T) {
	m := &mark{fd: -1}
	if !m.due(0) {
		t.Fatal("a mark at 0 is not due")
	}
	m.at = markAhead(100)
	for _, c := range []struct {
		committed uint64
		due       bool
	}{{100, false}, {m.at - mostRecords(0) - 1, false}, {m.at - mostRecords(0), true}, {m.at, true}} {
		if got := m.due(c.committed); got != c.due {
			t.Errorf("due(%d) with the mark at %d = %v, want %v", c.committed, m.at, got, c.due)
		}
	}
}

// waitStoring waits (up to a minute) until l stores events again: its
// writer retries every second once space returns.
func waitStoring(t *testing.T, l *Log) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for full, _ := l.Failing(); full; full, _ = l.Failing() {
		if time.Now().After(deadline) {
			t.Fatal("still refusing events a minute after space returned")
		}
		time.Sleep(20 * time.Millisecond)
	}
}
