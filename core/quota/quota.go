package quota

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Quota bounds one sandbox. A zero field is no bound.
type Quota struct {
	Bytes   int64 // the sum of the regular files' sizes
	Entries int64 // every name in the tree but the root
}

// Usage is what a sandbox holds now, against its quota.
type Usage struct {
	Bytes     int64
	Entries   int64
	Quota     Quota
	ScannedAt time.Time // the last scan that corrected the counts (zero: none yet)
}

// Count is what a subtree holds, or what an operation changed.
type Count struct{ Bytes, Entries int64 }

// Add adds v to c.
func (c *Count) Add(v Count) { c.Bytes += v.Bytes; c.Entries += v.Entries }

// ErrQuota is what every quota refusal is (errors.Is); it is ENOSPC too.
var ErrQuota = errors.New("quota exceeded")

// Error says which bound a change would pass: "bytes" or "entries", its
// limit, the usage when refused and the growth asked for.
type Error struct {
	Bound string
	Limit int64
	Usage int64
	Need  int64
}

func (e *Error) Error() string {
	return fmt.Sprintf("quota exceeded: %s limit %d, usage %d, %d more asked", e.Bound, e.Limit, e.Usage, e.Need)
}

// Is makes an *Error match ErrQuota (and, through Unwrap, ENOSPC).
func (e *Error) Is(target error) bool { return target == ErrQuota }

// Unwrap is ENOSPC: the errno the mirror answers, and what errors.As finds.
func (e *Error) Unwrap() error { return unix.ENOSPC }

// Tree is what the scan needs of the sandbox, which alone opens names.
type Tree struct {
	// Open dups the root. It is called under the scan's lock, never after
	// Stop, so the sandbox may close the root once Stop returns.
	Open func() (int, error)
	// Count counts the entries under the open directory fd (not itself)
	// and closes fd.
	Count func(ctx context.Context, fd int) (Count, error)
	// Refusal says why no growth may be recorded now (the journal's disk
	// full, its directory removed); nil, or a nil answer: none.
	Refusal func() error
	// Approx says the Ops' changes are not exactly the counted tree's
	// (an overlay's upper, which an Op's change may copy a whole lower
	// file up to): every Op's end then marks the counts for a sooner
	// scan, as an outside change does, save an EndExact (doc.go, "Forks").
	Approx bool
}

// State is one sandbox's bound and counts. The zero State is not ready:
// make it with New.
type State struct {
	tree           Tree
	bytes, entries atomic.Int64 // Quota
	// used are the counts, reservations under way included.
	usedBytes, usedEntries atomic.Int64
	// gen moves at every usage change and inflight counts the Ops under
	// way: a scan trusts its walk only if neither moved (scan.go).
	gen       atomic.Uint64
	inflight  atomic.Int64
	dirty     atomic.Bool  // an outside change of unknown size since the last scan
	scanned   atomic.Int64 // unix nanoseconds of the last scan that set the counts
	walkTook  atomic.Int64 // nanoseconds the last scan's walk took
	every     atomic.Int64 // Intervals, in nanoseconds
	soon      atomic.Int64
	scanMu    sync.Mutex // the timer and stopped; held while a scan dups the root
	scanning  sync.Mutex // one scan at a time (two would each add their difference)
	timer     *time.Timer
	timerSoon bool // timer is the sooner one, after an outside change
	stopped   bool
	open      openInodes // inode.go
	// ready is closed when the first scan has set the counts: a change
	// under a bound waits for it (Begin), so nothing passes a quota the
	// tree had already filled before the daemon started.
	ready     chan struct{}
	readyOnce sync.Once
}

// New is the State of a sandbox bounded by q, on tree, not yet counted:
// until Ready a bounded change waits.
func New(q Quota, tree Tree) *State {
	s := &State{tree: tree, ready: make(chan struct{})}
	s.Set(q)
	s.SetIntervals(DefaultIntervals)
	s.dirty.Store(true) // nothing counted yet: the first scan takes its walk however busy
	return s
}

// Set sets the bound (a zero Quota: none). It applies to the writes that
// start after it.
func (s *State) Set(q Quota) {
	s.bytes.Store(max(q.Bytes, 0))
	s.entries.Store(max(q.Entries, 0))
}

// Bound is the bound.
func (s *State) Bound() Quota {
	return Quota{Bytes: s.bytes.Load(), Entries: s.entries.Load()}
}

// Usage is what the sandbox holds, against its bound. While a write is
// under way its reservation is counted.
func (s *State) Usage() Usage {
	u := Usage{Bytes: s.usedBytes.Load(), Entries: s.usedEntries.Load(), Quota: s.Bound()}
	if ns := s.scanned.Load(); ns != 0 {
		u.ScannedAt = time.Unix(0, ns)
	}
	return u
}

// NoByteBound reports that no byte bound is set: the mirror may then
// write in passthrough, counted at the flush.
func (s *State) NoByteBound() bool { return s.bytes.Load() == 0 }

// Ready ends the wait of bounded changes for the first scan: after it,
// or when there will be none.
func (s *State) Ready() { s.readyOnce.Do(func() { close(s.ready) }) }

// Op is one operation's change of usage: begun before its first change of
// the tree, ended once with what it changed.
type Op struct {
	q              *State
	bytes, entries int64 // reserved so far
}

// Begin opens the Op of an operation, once the first scan has counted the
// tree when the sandbox has a bound.
// It is a value, not a pointer: a mirror WRITE begins one, and the hot
// path allocates nothing.
func (s *State) Begin() Op {
	if s.bytes.Load() > 0 || s.entries.Load() > 0 {
		<-s.ready
	}
	s.inflight.Add(1)
	s.gen.Add(1)
	return Op{q: s}
}

// Reserve adds growth of b bytes and e entries to usage if each count
// stays within its bound (a zero bound, or a count not growing, always
// passes), or changes nothing and returns the *Error in an *fs.PathError
// (op, apiPath name it). While the Tree's Refusal answers, any growth is
// refused with its error.
func (o *Op) Reserve(op, apiPath string, b, e int64) error {
	if (b > 0 || e > 0) && o.q.tree.Refusal != nil {
		if err := o.q.tree.Refusal(); err != nil {
			return &fs.PathError{Op: op, Path: apiPath, Err: err}
		}
	}
	if b > 0 {
		if err := grow(&o.q.usedBytes, o.q.bytes.Load(), b, "bytes"); err != nil {
			return &fs.PathError{Op: op, Path: apiPath, Err: err}
		}
		o.bytes += b
	}
	if e > 0 {
		if err := grow(&o.q.usedEntries, o.q.entries.Load(), e, "entries"); err != nil {
			if b > 0 {
				o.q.usedBytes.Add(-b)
				o.bytes -= b
			}
			return &fs.PathError{Op: op, Path: apiPath, Err: err}
		}
		o.entries += e
	}
	return nil
}

// ReserveTo reserves what brings the op's reserved bytes to b (nothing
// when it has that much already).
func (o *Op) ReserveTo(op, apiPath string, b int64) error {
	if b <= o.bytes {
		return nil
	}
	return o.Reserve(op, apiPath, b-o.bytes, 0)
}

// End records that the operation changed usage by b bytes and e entries
// (negative: freed), releasing what it reserved beyond that. A failed
// operation that changed nothing ends with 0, 0. Ending twice is fine.
func (o *Op) End(b, e int64) { o.end(b, e, false) }

// EndExact is End for an operation whose caller knows b and e are exactly
// what it changed in the counted tree, on an Approx tree too (a fork's
// write in a directory its upper already held, which copied nothing up):
// it marks no sooner scan, since there is nothing for one to settle.
func (o *Op) EndExact(b, e int64) { o.end(b, e, true) }

func (o *Op) end(b, e int64, exact bool) {
	if o.q == nil {
		return
	}
	if d := b - o.bytes; d != 0 {
		addFloor(&o.q.usedBytes, d)
	}
	if d := e - o.entries; d != 0 {
		addFloor(&o.q.usedEntries, d)
	}
	o.q.gen.Add(1)
	o.q.inflight.Add(-1)
	if o.q.tree.Approx && !exact {
		o.q.OutsideChange()
	}
	o.q = nil
}

// addFloor adds d to c, never taking it below 0: a count that would go
// negative was off (an outside change not yet rescanned), and a negative
// usage would let writes pass the bound.
func addFloor(c *atomic.Int64, d int64) {
	for {
		cur := c.Load()
		if c.CompareAndSwap(cur, max(cur+d, 0)) {
			return
		}
	}
}

// grow adds d to c unless that passes limit (0: none).
func grow(c *atomic.Int64, limit, d int64, bound string) error {
	for {
		cur := c.Load()
		if limit > 0 && cur+d > limit {
			return &Error{Bound: bound, Limit: limit, Usage: cur, Need: d}
		}
		if c.CompareAndSwap(cur, cur+d) {
			return nil
		}
	}
}

// Reader reserves, as the body of a write is read, what the bytes read so
// far need (Need(n): a replace's growth beyond the file it replaces, an
// in-place write's size), so a body past the quota fails at the block
// that passes it, before that is written.
type Reader struct {
	R    io.Reader
	Need func(n int64) error
	n    int64
}

func (q *Reader) Read(p []byte) (int, error) {
	k, err := q.R.Read(p)
	q.n += int64(k)
	if k > 0 {
		if rerr := q.Need(q.n); rerr != nil {
			return 0, rerr
		}
	}
	return k, err
}

// FreedBy is what removing one name of the file of stat st frees: its
// bytes (its accounted size, inode.go) when it is a regular file's last
// link, else none; the entry is the caller's to count.
//
// A file changed since the counts were last taken, while an outside change
// waits to be counted, may hold more than the counts ever did (an outside
// truncate -s 1T): it frees nothing now, and the rescan that outside
// change asked for counts what is left. So usage never goes below what
// was counted, and a bound is never passed on the strength of bytes that
// were not in it.
func (s *State) FreedBy(st *unix.Stat_t) int64 {
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink > 1 {
		return 0
	}
	if s.dirty.Load() {
		scanned := s.scanned.Load()
		if scanned == 0 || st.Ctim.Nano() >= scanned-s.walkTook.Load()-int64(ctimeSlack) {
			return 0
		}
	}
	return s.AccountedSize(st)
}

// ctimeSlack is how much earlier than the scan a file's ctime may read and
// its change still be after the scan: a filesystem's clock is coarser than
// the daemon's (a jiffy, or a second on some), and ctime reads the coarse
// one.
const ctimeSlack = time.Second
