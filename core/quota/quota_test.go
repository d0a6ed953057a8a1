package quota

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// fixedTree is a Tree whose walk finds what its count says, on a real
// directory descriptor (so Open and the close in Count are real).
type fixedTree struct {
	mu      sync.Mutex
	count   Count
	dir     string
	refusal error
}

func (f *fixedTree) tree() Tree {
	return Tree{
		Open: func() (int, error) { return unix.Open(f.dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0) },
		Count: func(ctx context.Context, fd int) (Count, error) {
			unix.Close(fd)
			f.mu.Lock()
			defer f.mu.Unlock()
			return f.count, nil
		},
		Refusal: func() error { return f.refusal },
	}
}

func newScanned(t *testing.T, q Quota, has Count) (*State, *fixedTree) {
	t.Helper()
	f := &fixedTree{count: has, dir: t.TempDir()}
	s := New(q, f.tree())
	if _, err := s.Scan(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.Ready()
	t.Cleanup(s.Stop)
	return s, f
}

func TestReserve(t *testing.T) {
	for _, c := range []struct {
		name      string
		quota     Quota
		has       Count
		b, e      int64
		wantBound string // "" = passes
	}{
		{"no bound", Quota{}, Count{1 << 40, 1 << 20}, 1 << 40, 1 << 20, ""},
		{"bytes fit", Quota{Bytes: 100}, Count{60, 1}, 40, 1, ""},
		{"bytes past", Quota{Bytes: 100}, Count{60, 1}, 41, 0, "bytes"},
		{"entries past", Quota{Entries: 2}, Count{0, 2}, 0, 1, "entries"},
		{"entries past, bytes fit: neither kept", Quota{Bytes: 100, Entries: 2}, Count{10, 2}, 5, 1, "entries"},
		{"shrinking passes over the bound", Quota{Bytes: 10}, Count{50, 1}, -20, -1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, _ := newScanned(t, c.quota, c.has)
			op := s.Begin()
			err := op.Reserve("write", "/f", c.b, c.e)
			var qe *Error
			switch {
			case c.wantBound == "" && err != nil:
				t.Fatalf("Reserve: %v", err)
			case c.wantBound != "":
				var pe *fs.PathError
				if !errors.As(err, &qe) || qe.Bound != c.wantBound || !errors.Is(err, ErrQuota) || !errors.Is(err, unix.ENOSPC) ||
					!errors.As(err, &pe) || pe.Op != "write" || pe.Path != "/f" {
					t.Fatalf("Reserve: %v, want a %s refusal naming write /f", err, c.wantBound)
				}
				if u := s.Usage(); u.Bytes != c.has.Bytes || u.Entries != c.has.Entries {
					t.Fatalf("usage %+v after a refusal, want %+v unchanged", u, c.has)
				}
			}
			op.End(0, 0)
			op.End(7, 7) // a second End changes nothing
			if u := s.Usage(); u.Bytes != c.has.Bytes || u.Entries != c.has.Entries {
				t.Fatalf("usage %+v after End(0, 0), want %+v: the reservation released", u, c.has)
			}
		})
	}
}

func TestEndCountsWhatChanged(t *testing.T) {
	s, _ := newScanned(t, Quota{Bytes: 1000}, Count{100, 2})
	op := s.Begin()
	if err := op.ReserveTo("write", "/f", 300); err != nil {
		t.Fatal(err)
	}
	if err := op.ReserveTo("write", "/f", 200); err != nil { // has that much already
		t.Fatal(err)
	}
	if u := s.Usage(); u.Bytes != 400 {
		t.Fatalf("usage while reserved %d, want 400", u.Bytes)
	}
	op.End(250, 1)
	if u := s.Usage(); u.Bytes != 350 || u.Entries != 3 {
		t.Fatalf("usage %+v, want 350 bytes, 3 entries", u)
	}
	op = s.Begin()
	op.End(-1000, -10) // freeing more than counted: never below zero
	if u := s.Usage(); u.Bytes != 0 || u.Entries != 0 {
		t.Fatalf("usage %+v, want 0, 0", u)
	}
}

func TestRefusalStopsGrowthOnly(t *testing.T) {
	s, f := newScanned(t, Quota{}, Count{10, 1})
	f.refusal = errors.New("state disk full")
	op := s.Begin()
	defer op.End(0, 0)
	if err := op.Reserve("write", "/f", 1, 0); err == nil || !strings.Contains(err.Error(), "state disk full") {
		t.Fatalf("growth while refused: %v", err)
	}
	if err := op.Reserve("remove", "/f", -5, -1); err != nil {
		t.Fatalf("freeing while refused: %v", err)
	}
}

func TestReaderStopsAtTheBlockPastTheBound(t *testing.T) {
	s, _ := newScanned(t, Quota{Bytes: 10}, Count{})
	op := s.Begin()
	defer op.End(0, 0)
	r := &Reader{R: strings.NewReader(strings.Repeat("x", 25)), Need: func(n int64) error { return op.ReserveTo("write", "/f", n) }}
	buf := make([]byte, 8)
	var got int
	var err error
	for err == nil {
		var k int
		k, err = r.Read(buf)
		got += k
	}
	if !errors.Is(err, ErrQuota) || got != 8 {
		t.Fatalf("read %d bytes, then %v; want 8 and a quota refusal", got, err)
	}
	_, err = io.ReadAll(&Reader{R: strings.NewReader("12345"), Need: func(n int64) error { return op.ReserveTo("write", "/f", n) }})
	if err != nil {
		t.Fatalf("a body within the bound: %v", err)
	}
}

func TestScanCorrectsAndWaitsForQuiet(t *testing.T) {
	s, f := newScanned(t, Quota{}, Count{10, 1})
	f.mu.Lock()
	f.count = Count{500, 7}
	f.mu.Unlock()
	if u := s.Usage(); u.Bytes != 10 {
		t.Fatalf("usage before a scan %+v", u)
	}
	u, err := s.Scan(t.Context())
	if err != nil || u.Bytes != 500 || u.Entries != 7 || u.ScannedAt.IsZero() {
		t.Fatalf("Scan: %+v, %v; want 500 bytes, 7 entries", u, err)
	}
	// An Op under way: the walk is not trusted, and with no outside change
	// waiting, the counts stand.
	op := s.Begin()
	if err := op.Reserve("write", "/f", 20, 1); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.count = Count{1, 1}
	f.mu.Unlock()
	if u, _ := s.Scan(t.Context()); u.Bytes != 520 || u.Entries != 8 {
		t.Fatalf("scan under a busy op %+v, want the counts kept (520, 8)", u)
	}
	op.End(20, 1)
	s.OutsideChange()
	if !s.Dirty() {
		t.Fatal("an outside change did not mark the counts")
	}
	if u, _ := s.Scan(t.Context()); u.Bytes != 1 || u.Entries != 1 || s.Dirty() {
		t.Fatalf("scan after the outside change %+v (dirty %v), want the walk's (1, 1)", u, s.Dirty())
	}
}

// TestApproxSettles: on an Approx tree (a fork's upper) every Op's end
// but an exact one and every MayCopyUp marks the counts for a scan, which
// sets them to the walk's, the copy-up the Op did not count included;
// elsewhere none marks anything.
func TestApproxSettles(t *testing.T) {
	changes := []struct {
		name  string
		do    func(s *State)
		exact bool
	}{
		{"an op's end", func(s *State) { op := s.Begin(); op.Reserve("write", "/f", 10, 1); op.End(10, 1) }, false},
		{"a failed op's end", func(s *State) { op := s.Begin(); op.End(0, 0) }, false},
		{"an attribute change", func(s *State) { s.MayCopyUp() }, false},
		{"an exact op's end", func(s *State) { op := s.Begin(); op.Reserve("write", "/f", 10, 1); op.EndExact(10, 1) }, true},
	}
	for _, approx := range []bool{false, true} {
		for _, c := range changes {
			t.Run(fmt.Sprintf("%s approx=%v", c.name, approx), func(t *testing.T) {
				f := &fixedTree{dir: t.TempDir()}
				tree := f.tree()
				tree.Approx = approx
				s := New(Quota{Bytes: 1 << 20}, tree)
				s.SetIntervals(Intervals{Every: time.Hour, Soon: time.Hour}) // the test scans
				t.Cleanup(s.Stop)
				if _, err := s.Scan(t.Context()); err != nil || s.Dirty() {
					t.Fatalf("first scan: %v, dirty %v", err, s.Dirty())
				}
				s.Ready()
				c.do(s)
				if want := approx && !c.exact; s.Dirty() != want {
					t.Fatalf("dirty %v after %s, want %v", s.Dirty(), c.name, want)
				}
				if u := s.Usage(); c.exact && (u.Bytes != 10 || u.Entries != 1) {
					t.Fatalf("counts after %s: %+v, want its 10 bytes, 1 entry", c.name, u)
				}
				// What the kernel copied up beneath: the walk finds more.
				f.mu.Lock()
				f.count = Count{5000, 3}
				f.mu.Unlock()
				if u, _ := s.Scan(t.Context()); approx && !c.exact && (u.Bytes != 5000 || u.Entries != 3 || s.Dirty()) {
					t.Fatalf("scan after %s: %+v (dirty %v), want the walk's 5000 bytes, 3 entries", c.name, u, s.Dirty())
				}
			})
		}
	}
}

func TestStopEndsWalks(t *testing.T) {
	s, f := newScanned(t, Quota{}, Count{})
	s.Stop()
	f.mu.Lock()
	f.count = Count{9, 9}
	f.mu.Unlock()
	if _, err := s.Scan(t.Context()); !errors.Is(err, unix.EBADF) {
		t.Fatalf("Scan after Stop: %v, want EBADF (the root may be closed)", err)
	}
}

func TestOpenInodesCountOnce(t *testing.T) {
	s, _ := newScanned(t, Quota{Bytes: 1 << 20}, Count{})
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st unix.Stat_t
	unix.Fstat(int(f.Fd()), &st)
	a, b := s.Track(&st), s.Track(&st)
	if a != b {
		t.Fatal("two handles of one inode got two counts")
	}
	ip := s.BeginInPlace(&st, a)
	if err := ip.GrowTo("write", "/f", 100); err != nil {
		t.Fatal(err)
	}
	f.WriteAt(make([]byte, 100), 0)
	ip.End(int(f.Fd()))
	ip.End(int(f.Fd())) // a second End changes nothing
	// The other handle's outside growth is counted at its flush.
	f.WriteAt(make([]byte, 50), 100)
	s.Sync(b, int(f.Fd()))
	if u := s.Usage(); u.Bytes != 150 {
		t.Fatalf("usage %d, want 150: each growth once", u.Bytes)
	}
	if got := s.AccountedSize(&st); got != 150 {
		t.Fatalf("accounted size %d, want 150", got)
	}
	s.Untrack(a)
	s.Untrack(b)
	if got := s.AccountedSize(&st); got != st.Size {
		t.Fatalf("accounted size once closed %d, want the stat's %d", got, st.Size)
	}
}
