package history

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

func openJournal(t *testing.T, dir string, keep Retention) (*Log, *journal.Journal) {
	t.Helper()
	return openJournalLog(t, dir, keep, nil)
}

// openJournalLog is openJournal with the log's messages going to log.
func openJournalLog(t *testing.T, dir string, keep Retention, log *slog.Logger) (*Log, *journal.Journal) {
	t.Helper()
	l, err := Open(dir, keep, log)
	if err != nil {
		t.Fatal(err)
	}
	j, err := journal.NewWith(l)
	if err != nil {
		t.Fatal(err)
	}
	return l, j
}

func scanAll(t *testing.T, j *journal.Journal, after uint64) ([]journal.Event, bool) {
	t.Helper()
	var out []journal.Event
	lost, err := j.Scan(context.Background(), after, func(e journal.Event) bool { out = append(out, e); return true })
	if err != nil {
		t.Fatal(err)
	}
	return out, lost
}

func sample(i int) journal.Event {
	return journal.Event{Type: journal.Write, Path: fmt.Sprintf("/d/f%03d", i), Origin: journal.Mirror, Pid: uint32(100 + i),
		Uid: 1000, Comm: "vim", Cgroup: "/user.slice", Size: int64(i), Mtime: time.Unix(1700000000, int64(i)), Inode: uint64(5000 + i), Mode: 0o644}
}

func TestCodecRoundTrip(t *testing.T) {
	for _, e := range []journal.Event{
		{},
		{Seq: 1, Type: journal.Rename, Path: "/a/\xff", OldPath: "/b", IsDir: true, Origin: journal.API, Actor: "agent ✓", Time: time.Unix(0, 42)},
		{Seq: 1 << 60, Type: journal.Create, Path: "/x", Origin: journal.External, FoundAtStart: true, Size: -1, Mode: 0o4755},
	} {
		got, err := decodeEvent(appendEvent(nil, e))
		if err != nil || !reflect.DeepEqual(got, e) {
			t.Errorf("round trip of %+v: %+v, %v", e, got, err)
		}
	}
	b := appendEvent(nil, sample(1))
	for n := range len(b) {
		if _, err := decodeEvent(b[:n]); err == nil && n < len(b)-1 {
			t.Errorf("a record cut to %d of %d bytes decoded", n, len(b))
		}
	}
}

// The numbering and the events outlive the journal: a new one over the
// same directory goes on from the last seq, and Scan reads the old ones
// back with every field.
func TestReopenContinues(t *testing.T) {
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{})
	var want []journal.Event
	for i := range 300 {
		want = append(want, j.Append(sample(i)))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	l, j = openJournal(t, dir, Retention{})
	defer l.Close()
	if j.Seq() != 300 {
		t.Fatalf("seq after reopen = %d, want 300", j.Seq())
	}
	if e := j.Append(sample(300)); e.Seq != 301 {
		t.Fatalf("next seq = %d, want 301", e.Seq)
	}
	got, lost := scanAll(t, j, 0)
	if lost || len(got) != 301 {
		t.Fatalf("scan: %d events, lost %v", len(got), lost)
	}
	for i, w := range want {
		g := got[i]
		if !g.Time.Equal(w.Time) || !g.Mtime.Equal(w.Mtime) {
			t.Fatalf("event %d times: %v %v, want %v %v", i, g.Time, g.Mtime, w.Time, w.Mtime)
		}
		g.Time, g.Mtime, w.Time, w.Mtime = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("event %d: %+v, want %+v", i, g, w)
		}
	}
	if got, _ := scanAll(t, j, 299); len(got) != 2 || got[0].Seq != 300 || got[1].Seq != 301 {
		t.Fatalf("scan after 299: %+v", got)
	}
}

// A daemon killed before the writer stored its last events loses none of
// them: the tail has them, and the next open gives them to the database.
func TestTailRecovery(t *testing.T) {
	dir := t.TempDir()
	l, _ := openJournal(t, dir, Retention{})
	l.Close()
	dfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(dfd)
	tl, err := openTail(dfd, "tail")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 5; i++ {
		e := sample(i)
		e.Seq = uint64(i)
		if !tl.fits(e) {
			t.Fatal("no room")
		}
		tl.write(e.Seq)
	}
	// A torn sixth record: its header says more than was written.
	e := sample(6)
	e.Seq = 6
	tl.fits(e)
	copy(tl.mem[tl.pos+recordHead:], tl.buf[:3])
	tl.mem[tl.pos] = byte(len(tl.buf))
	tl.close()

	l, j := openJournal(t, dir, Retention{})
	defer l.Close()
	// The torn sixth may have been handed out (a power loss tears a
	// record; a kill cannot): its number, and any the rest of the tail
	// could have held, are never used again, and a scan says lost.
	if j.Seq() <= 5+mostRecords(int(tl.pos))-1 {
		t.Fatalf("seq after recovery = %d, want past %d", j.Seq(), 5+mostRecords(int(tl.pos))-1)
	}
	got, lost := scanAll(t, j, 0)
	if len(got) != 5 || got[4].Path != sample(5).Path || got[4].Comm != "vim" || !lost {
		t.Fatalf("recovered %d events (lost %v): %+v", len(got), lost, got)
	}
	if _, lost := scanAll(t, j, 5); !lost {
		t.Errorf("a cursor at the last kept event is not told of the loss")
	}
	next := j.Append(sample(7))
	if next.Seq != j.Seq() || next.Seq <= 5 {
		t.Errorf("the next event got seq %d", next.Seq)
	}
}

// TestTailRemoved: a tail removed (or truncated) while the database holds
// events is damage too: the numbering goes on above anything it held.
func TestTailRemoved(t *testing.T) {
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{})
	for i := 1; i <= 10; i++ {
		j.Append(sample(i))
	}
	l.Close()
	must(t, os.Remove(filepath.Join(dir, "tail")))
	l, j = openJournal(t, dir, Retention{})
	defer l.Close()
	if j.Seq() < 10+mostRecords(0) {
		t.Fatalf("seq %d after the tail was removed, want at least %d", j.Seq(), 10+mostRecords(0))
	}
	if got, lost := scanAll(t, j, 10); len(got) != 0 || !lost {
		t.Errorf("from seq 10: %d events, lost %v; want none and lost", len(got), lost)
	}
	// A clean reopen after that goes on where it was.
	seq := j.Seq()
	l.Close()
	l, j = openJournal(t, dir, Retention{})
	defer l.Close()
	if j.Seq() != seq {
		t.Errorf("seq %d after a clean reopen, want %d", j.Seq(), seq)
	}
}

// TestWatcherAfterDamage: a watcher's cursor past what a damaged tail
// kept is told overflow after the restart, never an empty answer; the
// numbering never goes back to it.
func TestWatcherAfterDamage(t *testing.T) {
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{})
	w, _, _, err := j.Watch(journal.Config{Path: "/", Recursive: true, Exclude: []string{}})
	must(t, err)
	for i := 1; i <= 30; i++ {
		j.Append(sample(i))
	}
	b, _, err := w.Read(0, 0)
	must(t, err)
	cursor := b.Cursor // handed out: 30 events
	l.Close()
	// The tail truncated (a damaged disk, a file cut short): what it held
	// past the database may be gone.
	l2, err := Open(dir, Retention{}, nil)
	must(t, err)
	l2.Close()
	must(t, os.Truncate(filepath.Join(dir, "tail"), 1000))
	l, j = openJournal(t, dir, Retention{})
	defer l.Close()
	if j.Seq() <= cursor {
		t.Fatalf("seq %d after the damage, at or below the cursor %d handed out", j.Seq(), cursor)
	}
	w, err = j.Watcher(w.ID)
	must(t, err)
	b, _, err = w.Read(cursor, 0)
	must(t, err)
	if !b.Overflow {
		t.Errorf("a cursor past what was kept: %d events, overflow %v; want overflow", len(b.Events), b.Overflow)
	}
}

// TestCloseLeavesTheRestToTheTail: a close that has no time to commit what
// is pending leaves it in the tail, and the next open stores all of it.
func TestCloseLeavesTheRestToTheTail(t *testing.T) {
	defer func(w time.Duration) { closeWait = w }(closeWait)
	closeWait = 0
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{})
	const n = 3 * maxBatch
	for i := 1; i <= n; i++ {
		j.Append(sample(i))
	}
	l.Close()
	l, j = openJournal(t, dir, Retention{})
	defer l.Close()
	if j.Seq() != n {
		t.Fatalf("seq after the reopen = %d, want %d", j.Seq(), n)
	}
	got, lost := scanAll(t, j, 0)
	if len(got) != n || lost || got[n-1].Path != sample(n).Path {
		t.Fatalf("after the reopen: %d events (lost %v), want %d", len(got), lost, n)
	}
}

// TestBatchesBounded: events appended while the writer commits are stored
// in transactions of at most maxBatch, so a close waits on one of them at
// most, however far the database lags.
func TestBatchesBounded(t *testing.T) {
	defer func(f func(int) error) { beforeCommit = f }(beforeCommit)
	var mu sync.Mutex
	var sizes []int
	held, release := make(chan struct{}), make(chan struct{})
	beforeCommit = func(n int) error {
		mu.Lock()
		sizes = append(sizes, n)
		first := len(sizes) == 1
		mu.Unlock()
		if first {
			close(held)
			<-release
		}
		return nil
	}
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{})
	j.Append(sample(1))
	l.urgently()
	<-held // the writer commits the first event; the rest piles up
	const n = 5*maxBatch + 7
	for i := 2; i <= n; i++ {
		j.Append(sample(i))
	}
	close(release)
	must(t, l.Sync())
	l.Close()
	mu.Lock()
	defer mu.Unlock()
	sum := 0
	for _, s := range sizes {
		if s > maxBatch {
			t.Errorf("a transaction of %d events; want at most %d (all: %v)", s, maxBatch, sizes)
		}
		sum += s
	}
	if sum != n {
		t.Errorf("the transactions stored %d events, want %d (%v)", sum, n, sizes)
	}
}

// Retention prunes oldest first, never past the manifest, and a scan from
// before what is kept says lost.
func TestRetentionPrunes(t *testing.T) {
	l, j := openJournal(t, t.TempDir(), Retention{MaxEvents: 50})
	for i := range 200 {
		j.Append(sample(i))
	}
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	if o := l.Oldest(); o != 1 {
		t.Fatalf("pruned to %d before any manifest; want nothing pruned", o)
	}
	if err := l.SaveManifest(Manifest{Seq: 180}); err != nil {
		t.Fatal(err)
	}
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	if o := l.Oldest(); o != 151 {
		t.Fatalf("oldest after prune = %d, want 151", o)
	}
	// A new journal over the same store has only what was kept.
	l2, j2 := l, j
	l2.Close()
	l2, j2 = openJournal(t, l.dir, Retention{MaxEvents: 50})
	defer l2.Close()
	if got, lost := scanAll(t, j2, 10); !lost || len(got) != 50 || got[0].Seq != 151 {
		t.Fatalf("scan from 10 after pruning: %d events from %d, lost %v; want 50 from 151, lost", len(got), got[0].Seq, lost)
	}
	if got, lost := scanAll(t, j2, 150); lost || len(got) != 50 {
		t.Fatalf("a scan from the oldest kept: %d events, lost %v", len(got), lost)
	}
}

// TestPruneKeepsNewest: retention that would take every event (all
// older than MaxAge, the manifest at the newest) keeps the newest, so the
// numbering goes on from it after a restart, with no loss told.
func TestPruneKeepsNewest(t *testing.T) {
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{MaxAge: time.Nanosecond})
	for i := range 20 {
		j.Append(sample(i))
	}
	if err := l.SaveManifest(Manifest{Seq: 20}); err != nil {
		t.Fatal(err)
	}
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	if o := l.Oldest(); o != 20 {
		t.Fatalf("oldest after pruning all but the newest = %d, want 20", o)
	}
	l.Close()
	l, j = openJournal(t, dir, Retention{MaxAge: time.Nanosecond})
	defer l.Close()
	if j.Seq() != 20 {
		t.Errorf("seq %d after the restart, want 20", j.Seq())
	}
	if got, lost := scanAll(t, j, 19); lost || len(got) != 1 || got[0].Seq != 20 {
		t.Errorf("from 19: %d events, lost %v; want the newest alone", len(got), lost)
	}
}

// Watchers outlive a restart with their ids; a cursor from before it is
// answered from the store, and one older than retention gets overflow.
func TestWatcherOutlivesRestart(t *testing.T) {
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{MaxEvents: 20})
	w, info, _, err := j.Watch(journal.Config{Path: "/d", Recursive: true, Exclude: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		j.Append(sample(i))
	}
	j.Append(journal.Event{Type: journal.Write, Path: "/elsewhere", Origin: journal.API})
	b, err := w.Poll(context.Background(), info.InitialCursor, 10, 0)
	if err != nil || len(b.Events) != 10 {
		t.Fatalf("poll before restart: %d events, %v", len(b.Events), err)
	}
	cursor := b.Cursor // 10 read of 30
	l.Close()

	l, j = openJournal(t, dir, Retention{MaxEvents: 20})
	defer l.Close()
	w2, err := j.Watcher(w.ID)
	if err != nil {
		t.Fatalf("watcher %s after restart: %v", w.ID, err)
	}
	j.Append(sample(99))
	var paths []string
	for range 10 {
		b, err := w2.Poll(context.Background(), cursor, 7, 0)
		if err != nil {
			t.Fatal(err)
		}
		if b.Overflow {
			t.Fatalf("overflow at cursor %d", cursor)
		}
		if len(b.Events) == 0 {
			break
		}
		for _, e := range b.Events {
			paths = append(paths, e.Path)
		}
		cursor = b.Cursor
	}
	want := []string{}
	for i := 10; i < 30; i++ {
		want = append(want, sample(i).Path)
	}
	want = append(want, sample(99).Path)
	if !reflect.DeepEqual(paths, want) {
		t.Fatalf("resumed: %v\nwant %v", paths, want)
	}

	// Prune past the first cursor: it now overflows, then goes on.
	if err := l.SaveManifest(Manifest{Seq: j.Seq()}); err != nil {
		t.Fatal(err)
	}
	if err := l.Prune(); err != nil {
		t.Fatal(err)
	}
	b, err = w2.Poll(context.Background(), info.InitialCursor+1, 100, 0)
	if err != nil || !b.Overflow {
		t.Fatalf("an old cursor after pruning: overflow %v, %v", b.Overflow, err)
	}
}

// A watcher's references outlive a restart: each is released once, and
// the numbering goes on.
func TestWatcherReferencesOutliveRestart(t *testing.T) {
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{})
	cfg := journal.Config{Path: "/", Recursive: true}
	w, a, _, _ := j.Watch(cfg)
	_, b, _, _ := j.Watch(cfg)
	if _, err := j.Release(a.Ref); err != nil {
		t.Fatal(err)
	}
	l.Close()

	l, j = openJournal(t, dir, Retention{})
	defer l.Close()
	if _, err := j.Release(a.Ref); !errors.Is(err, journal.ErrUnknownWatcher) {
		t.Errorf("a reference released before the restart: %v", err)
	}
	_, c, reused, _ := j.Watch(cfg)
	if !reused || c.Ref != w.ID+".3" || c.Refs != 2 {
		t.Errorf("a create after the restart: %q reused %v refs %d", c.Ref, reused, c.Refs)
	}
	for i, want := range []int{1, 0} {
		if n, err := j.Release([]string{b.Ref, c.Ref}[i]); n != want || err != nil {
			t.Errorf("release %d: %d, %v; want %d", i, n, err, want)
		}
	}
	if _, err := j.Watcher(w.ID); !errors.Is(err, journal.ErrUnknownWatcher) {
		t.Errorf("the last reference released: %v", err)
	}
}

// A watcher row from before references (a count, no reference ids) holds
// its count under the watcher's own id: its clients, who were given that
// id, release it that many times.
func TestWatcherRowWithoutReferences(t *testing.T) {
	dir := t.TempDir()
	l, j := openJournal(t, dir, Retention{})
	cfg := journal.Config{Path: "/", Recursive: true}
	w, _, _, _ := j.Watch(cfg)
	old, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.db.sql.Exec(`UPDATE watchers SET config = ?, refs = 2`, string(old)); err != nil {
		t.Fatal(err)
	}
	l.Close()

	l, j = openJournal(t, dir, Retention{})
	defer l.Close()
	for i, want := range []int{1, 0} {
		if n, err := j.Release(w.ID); n != want || err != nil {
			t.Errorf("release %d of the old row's id: %d, %v; want %d", i, n, err, want)
		}
	}
	if _, err := j.Release(w.ID); !errors.Is(err, journal.ErrUnknownWatcher) {
		t.Errorf("a third release: %v", err)
	}
}

// TestPruneDue: the writer prunes at most every pruneEvery when events
// were committed since the last prune, at once when the manifest moved,
// and idle once every idlePruneEvery (the age bound).
func TestPruneDue(t *testing.T) {
	l := &Log{}
	t0 := time.Unix(1700000000, 0)
	e := pruneEvery
	for _, step := range []struct {
		at                  time.Duration
		committed, prunable uint64
		want                bool
	}{
		{0, 0, 0, true}, // the first
		{e / 2, 0, 0, false},
		{2 * e, 0, 0, false}, // nothing new
		{2 * e, 5, 0, true},  // committed
		{2*e + e/2, 9, 0, false},
		{3 * e, 9, 0, true},
		{5 * e, 9, 0, false},
		{5*e + time.Second, 9, 7, true}, // the manifest moved: at once
		{5*e + 2*time.Second, 9, 7, false},
		{5*e + 2*time.Second + idlePruneEvery, 9, 7, true}, // idle: the age bound
		{6*e + 2*time.Second + idlePruneEvery, 9, 7, false},
	} {
		l.committed, l.prunable = step.committed, step.prunable
		if got := l.pruneDue(t0.Add(step.at)); got != step.want {
			t.Fatalf("at %v (committed %d, prunable %d): pruneDue %v, want %v", step.at, step.committed, step.prunable, got, step.want)
		}
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
