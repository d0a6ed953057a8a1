package core

import (
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// # Quotas
//
// A sandbox may be bounded in bytes and in entries. Bytes are the sum of
// the apparent sizes (st_size) of its regular files, each inode once
// however many names it has in the tree (as du counts hard links: a link
// is an entry and no bytes); directories, symlinks and special files
// weigh no bytes. Entries are every name in the tree but the root, a hard
// link's second name included. The bound holds alike for every way of
// writing through the daemon: REST writes, uploads, tar extraction, copies,
// mkdir, and the FUSE mirror's writes, truncates, fallocates and creates.
// A change past it fails with a *QuotaError (errors.Is ErrQuota and
// unix.ENOSPC, which the mirror tells the kernel and REST answers 507), and
// the old content is kept: a replacing write's temp file is dropped.
//
// Usage is kept by the operations, not by walking the tree per write:
// each one opens a usageOp before its first change, reserves the growth it
// is about to make (atomically against the bound, so two writers never
// both pass a check that only one fits: a write reserves as its body
// arrives, beyond the bytes of the file it replaces), and ends it with the
// change it made, which releases what it reserved and did not use. Core's
// own temp files (a write's, an upload's spool, a copy's or tar's
// staging) are not entries; their bytes are reserved as growth. What the
// journal hears from outside (inotify, origin external) changes usage by
// an amount nobody knows, so it only marks the counts for a sooner rescan
// (quota_scan.go). No per-file state is kept, but for the inodes the mirror
// has open for writing (quota_inode.go).

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

// ErrQuota is what every quota refusal is (errors.Is); it is ENOSPC too.
var ErrQuota = errors.New("quota exceeded")

// QuotaError says which bound a change would pass: "bytes" or "entries",
// its limit, the usage when refused and the growth asked for.
type QuotaError struct {
	Bound string
	Limit int64
	Usage int64
	Need  int64
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("quota exceeded: %s limit %d, usage %d, %d more asked", e.Bound, e.Limit, e.Usage, e.Need)
}

// Is makes a *QuotaError match ErrQuota (and, through Unwrap, ENOSPC).
func (e *QuotaError) Is(target error) bool { return target == ErrQuota }

// Unwrap is ENOSPC: the errno the mirror answers, and what errors.As finds.
func (e *QuotaError) Unwrap() error { return unix.ENOSPC }

// quotaState is the sandbox's bound and counts.
type quotaState struct {
	bytes, entries atomic.Int64 // Quota
	// used are the counts, reservations under way included.
	usedBytes, usedEntries atomic.Int64
	// gen moves at every usage change and inflight counts the usageOps
	// under way: a scan trusts its walk only if neither moved (quota_scan.go).
	gen      atomic.Uint64
	inflight atomic.Int64
	dirty    atomic.Bool  // an outside change of unknown size since the last scan
	scanned  atomic.Int64 // unix nanoseconds of the last scan that set the counts
	walkTook atomic.Int64 // nanoseconds the last scan's walk took
	scanMu   sync.Mutex   // the timer; held while a scan dups the root fd
	scanning sync.Mutex   // one scan at a time (two would each add their difference)
	timer    *time.Timer  // the next scan
	soon     bool         // timer is the sooner one, after an outside change
	open     openInodes   // quota_inode.go
	// refusal says why the journal cannot record a change now (its disk
	// full, its directory removed): growth is then refused (statefull.go).
	// Nil: never.
	refusal func() error
	// ready is closed when the first scan has set the counts: a change
	// under a bound waits for it (usageBegin), so nothing passes a quota
	// the tree had already filled before the daemon started.
	ready chan struct{}
}

// SetQuota sets the sandbox's bound (a zero Quota: none). It applies to
// the writes that start after it.
func (s *Sandbox) SetQuota(q Quota) {
	s.quota.bytes.Store(max(q.Bytes, 0))
	s.quota.entries.Store(max(q.Entries, 0))
}

// Quota is the sandbox's bound.
func (s *Sandbox) Quota() Quota {
	return Quota{Bytes: s.quota.bytes.Load(), Entries: s.quota.entries.Load()}
}

// Usage is what the sandbox holds, against its quota. While a write is
// under way its reservation is counted.
func (s *Sandbox) Usage() Usage {
	u := Usage{Bytes: s.quota.usedBytes.Load(), Entries: s.quota.usedEntries.Load(), Quota: s.Quota()}
	if ns := s.quota.scanned.Load(); ns != 0 {
		u.ScannedAt = time.Unix(0, ns)
	}
	return u
}

// usageOp is one operation's change of usage: begun before its first
// change of the tree, ended once with what it changed.
type usageOp struct {
	q              *quotaState
	bytes, entries int64 // reserved so far
}

// usageBegin opens the usageOp of an operation, once the first scan has
// counted the tree when the sandbox has a bound.
func (s *Sandbox) usageBegin() usageOp {
	if s.quota.bytes.Load() > 0 || s.quota.entries.Load() > 0 {
		<-s.quota.ready
	}
	s.quota.inflight.Add(1)
	s.quota.gen.Add(1)
	return usageOp{q: &s.quota}
}

// reserve adds growth of b bytes and e entries to usage if each count
// stays within its bound (a zero bound, or a count not growing, always
// passes), or changes nothing and returns the *QuotaError (op, ap name it);
// while the journal cannot record it (statefull.go), any growth is refused.
func (o *usageOp) reserve(op, ap string, b, e int64) error {
	if (b > 0 || e > 0) && o.q.refusal != nil {
		if err := o.q.refusal(); err != nil {
			return pathErr(op, ap, err) // statefull.go
		}
	}
	if b > 0 {
		if err := grow(&o.q.usedBytes, o.q.bytes.Load(), b, "bytes"); err != nil {
			return pathErr(op, ap, err)
		}
		o.bytes += b
	}
	if e > 0 {
		if err := grow(&o.q.usedEntries, o.q.entries.Load(), e, "entries"); err != nil {
			if b > 0 {
				o.q.usedBytes.Add(-b)
				o.bytes -= b
			}
			return pathErr(op, ap, err)
		}
		o.entries += e
	}
	return nil
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
			return &QuotaError{Bound: bound, Limit: limit, Usage: cur, Need: d}
		}
		if c.CompareAndSwap(cur, cur+d) {
			return nil
		}
	}
}

// reserveTo reserves what brings the op's reserved bytes to b (nothing
// when it has that much already).
// reserveEntry reserves the one entry a new name in dirfd adds. Refused,
// the operation ends, and the error is EEXIST when the name is taken (what
// the call would have answered under no quota), else the quota's.
func (o *usageOp) reserveEntry(dirfd int, name, op, ap string) error {
	if err := o.reserve(op, ap, 0, 1); err != nil {
		o.end(0, 0)
		return refusedUnlessExists(dirfd, name, op, ap, err)
	}
	return nil
}

func (o *usageOp) reserveTo(op, ap string, b int64) error {
	if b <= o.bytes {
		return nil
	}
	return o.reserve(op, ap, b-o.bytes, 0)
}

// end records that the operation changed usage by b bytes and e entries
// (negative: freed), releasing what it reserved beyond that. A failed
// operation that changed nothing ends with 0, 0.
func (o *usageOp) end(b, e int64) {
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
	o.q = nil
}

// reservingReader reserves, as the body of a write is read, what the
// bytes read so far need (need(n): a replace's growth beyond the file it
// replaces, an in-place write's size), so a body past the quota fails at
// the block that passes it, before that is written.
type reservingReader struct {
	r    io.Reader
	need func(n int64) error
	n    int64
}

func (q *reservingReader) Read(p []byte) (int, error) {
	k, err := q.r.Read(p)
	q.n += int64(k)
	if k > 0 {
		if rerr := q.need(q.n); rerr != nil {
			return 0, rerr
		}
	}
	return k, err
}

// freedBy is what removing one name of the file of stat st frees: its
// bytes (its accounted size, quota_inode.go) when it is a regular file's
// last link, else none; the entry always.
//
// A file changed since the counts were last taken, while an outside change
// waits to be counted, may hold more than the counts ever did (an outside
// truncate -s 1T): it frees nothing now, and the rescan that outside
// change asked for counts what is left. So usage never goes below what
// was counted, and a bound is never passed on the strength of bytes that
// were not in it.
func (s *Sandbox) freedBy(st *unix.Stat_t) int64 {
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink > 1 {
		return 0
	}
	q := &s.quota
	if q.dirty.Load() {
		scanned := q.scanned.Load()
		if scanned == 0 || st.Ctim.Nano() >= scanned-q.walkTook.Load()-int64(ctimeSlack) {
			return 0
		}
	}
	return s.accountedSize(st)
}

// ctimeSlack is how much earlier than the scan a file's ctime may read and
// its change still be after the scan: a filesystem's clock is coarser than
// the daemon's (a jiffy, or a second on some), and ctime reads the coarse
// one.
const ctimeSlack = time.Second
