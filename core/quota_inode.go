package core

import (
	"sync"

	"golang.org/x/sys/unix"
)

// The inodes the mirror has open for writing are the one per-file state
// the quota keeps, and only while they are open: for each, the size usage
// counts it at. Every size change the daemon makes to such an inode (a
// mirror WRITE, a truncate, a fallocate, a REST write in place) goes
// through it under its lock, so two handles of one file never count one
// growth twice; a flush or release counts what the file's size did
// without the daemon (a passthrough write, an outside writer), so usage
// is the file's size again once it is closed. A sandbox with a byte quota
// opens nothing in passthrough (Handle.Passthrough), so
// every write is checked before it is made; without one, passthrough
// writes are counted at the flush.

type inoKey struct{ dev, ino uint64 }

type openInodes struct {
	mu sync.Mutex
	m  map[inoKey]*openInode // nil when the mirror has nothing open for writing
}

// openInode is one inode open for writing: its accounted size.
type openInode struct {
	key  inoKey
	refs int // handles open on it
	mu   sync.Mutex
	size int64
}

// track counts a handle open for writing on the file of stat st.
func (s *Sandbox) track(st *unix.Stat_t) *openInode {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	o := &s.quota.open
	k := inoKey{uint64(st.Dev), st.Ino}
	o.mu.Lock()
	defer o.mu.Unlock()
	if oi := o.m[k]; oi != nil {
		oi.refs++
		return oi
	}
	if o.m == nil {
		o.m = map[inoKey]*openInode{}
	}
	oi := &openInode{key: k, refs: 1, size: st.Size}
	o.m[k] = oi
	return oi
}

// untrack ends a handle's count of oi.
func (s *Sandbox) untrack(oi *openInode) {
	o := &s.quota.open
	o.mu.Lock()
	defer o.mu.Unlock()
	if oi.refs--; oi.refs == 0 {
		delete(o.m, oi.key)
		if len(o.m) == 0 {
			o.m = nil
		}
	}
}

// tracked is the open inode of stat st, nil when the mirror has it not
// open for writing.
func (s *Sandbox) tracked(st *unix.Stat_t) *openInode {
	o := &s.quota.open
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[inoKey{uint64(st.Dev), st.Ino}]
}

// accountedSize is the size usage counts the file of stat st at: its
// open inode's, else its own.
func (s *Sandbox) accountedSize(st *unix.Stat_t) int64 {
	if oi := s.tracked(st); oi != nil {
		oi.mu.Lock()
		defer oi.mu.Unlock()
		return oi.size
	}
	return st.Size
}

// inPlace is a size change of one open regular file under way, begun by
// beginInPlace and ended by end: its accounted size before, its open
// inode locked (when the mirror has it open), the usageOp.
type inPlace struct {
	s      *Sandbox
	oi     *openInode
	before int64
	linked bool // it has a name: its bytes count
	op     usageOp
}

// beginInPlace starts a size change of the file of stat st (oi: the
// handle's open inode when the caller has it, else looked up).
func (s *Sandbox) beginInPlace(st *unix.Stat_t, oi *openInode) inPlace {
	if oi == nil {
		oi = s.tracked(st)
	}
	p := inPlace{s: s, oi: oi, before: st.Size, linked: st.Nlink > 0 && st.Mode&unix.S_IFMT == unix.S_IFREG}
	if oi != nil {
		oi.mu.Lock()
		p.before = oi.size
	}
	p.op = s.usageBegin()
	return p
}

// growTo reserves what taking the file to size bytes needs.
func (p *inPlace) growTo(op, ap string, size int64) error {
	if !p.linked {
		return nil
	}
	return p.op.reserveTo(op, ap, size-p.before)
}

// end counts the file's size now (fd's fstat) and lets the inode go.
func (p *inPlace) end(fd int) {
	if p.s == nil {
		return // ended already
	}
	p.s = nil
	var st unix.Stat_t
	d := int64(0)
	if unix.Fstat(fd, &st) == nil && p.linked && st.Nlink > 0 {
		d = st.Size - p.before
		if p.oi != nil {
			p.oi.size = st.Size
		}
	}
	p.op.end(d, 0)
	if p.oi != nil {
		p.oi.mu.Unlock()
	}
}

// sync counts what the open inode's size did without the daemon since
// last counted (a passthrough write, an outside writer): at a flush and a
// release.
func (s *Sandbox) syncInode(oi *openInode, fd int) {
	if oi == nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return
	}
	p := s.beginInPlace(&st, oi)
	p.end(fd)
}
