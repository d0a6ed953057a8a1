package quota

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
// opens nothing in passthrough (NoByteBound), so every write is checked
// before it is made; without one, passthrough writes are counted at the
// flush.

// InoKey names an inode: its device and number.
type InoKey struct{ Dev, Ino uint64 }

// KeyOf is the InoKey of stat st.
func KeyOf(st *unix.Stat_t) InoKey { return InoKey{uint64(st.Dev), st.Ino} }

type openInodes struct {
	mu sync.Mutex
	m  map[InoKey]*Inode // nil when the mirror has nothing open for writing
}

// Inode is one inode open for writing: its accounted size.
type Inode struct {
	key  InoKey
	refs int // handles open on it
	mu   sync.Mutex
	size int64
}

// Track counts a handle open for writing on the file of stat st (nil for
// anything but a regular file).
func (s *State) Track(st *unix.Stat_t) *Inode {
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil
	}
	o := &s.open
	k := KeyOf(st)
	o.mu.Lock()
	defer o.mu.Unlock()
	if oi := o.m[k]; oi != nil {
		oi.refs++
		return oi
	}
	if o.m == nil {
		o.m = map[InoKey]*Inode{}
	}
	oi := &Inode{key: k, refs: 1, size: st.Size}
	o.m[k] = oi
	return oi
}

// Untrack ends a handle's count of oi.
func (s *State) Untrack(oi *Inode) {
	if oi == nil {
		return
	}
	o := &s.open
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
func (s *State) tracked(st *unix.Stat_t) *Inode {
	o := &s.open
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.m[KeyOf(st)]
}

// AccountedSize is the size usage counts the file of stat st at: its
// open inode's, else its own.
func (s *State) AccountedSize(st *unix.Stat_t) int64 {
	if oi := s.tracked(st); oi != nil {
		oi.mu.Lock()
		defer oi.mu.Unlock()
		return oi.size
	}
	return st.Size
}

// InPlace is a size change of one open regular file under way, begun by
// BeginInPlace and ended by End: its accounted size before, its open
// inode locked (when the mirror has it open), the Op.
type InPlace struct {
	oi     *Inode
	before int64
	linked bool // it has a name: its bytes count
	op     Op   // ended (op.q nil) once End ran
}

// BeginInPlace starts a size change of the file of stat st (oi: the
// handle's open inode when the caller has it, else looked up).
func (s *State) BeginInPlace(st *unix.Stat_t, oi *Inode) InPlace {
	if oi == nil {
		oi = s.tracked(st)
	}
	p := InPlace{oi: oi, before: st.Size, linked: st.Nlink > 0 && st.Mode&unix.S_IFMT == unix.S_IFREG}
	if oi != nil {
		oi.mu.Lock()
		p.before = oi.size
	}
	p.op = s.Begin()
	return p
}

// GrowTo reserves what taking the file to size bytes needs.
func (p *InPlace) GrowTo(op, apiPath string, size int64) error {
	if !p.linked {
		return nil
	}
	return p.op.ReserveTo(op, apiPath, size-p.before)
}

// End counts the file's size now (fd's fstat) and lets the inode go.
// Ending twice is fine.
func (p *InPlace) End(fd int) {
	if p.op.q == nil {
		return
	}
	var st unix.Stat_t
	d := int64(0)
	if unix.Fstat(fd, &st) == nil && p.linked && st.Nlink > 0 {
		d = st.Size - p.before
		if p.oi != nil {
			p.oi.size = st.Size
		}
	}
	p.op.End(d, 0)
	if p.oi != nil {
		p.oi.mu.Unlock()
	}
}

// Sync counts what the open inode's size did without the daemon since
// last counted (a passthrough write, an outside writer): at a flush and a
// release.
func (s *State) Sync(oi *Inode, fd int) {
	if oi == nil {
		return
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return
	}
	p := s.BeginInPlace(&st, oi)
	p.End(fd)
}

// Before is the size the file was counted at when the change began.
func (p *InPlace) Before() int64 { return p.before }
