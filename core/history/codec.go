package history

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"time"

	"sandfs/core/journal"
)

// The tail's record payload: one event, fields in a fixed order, integers
// as varints and strings length-prefixed. Only this file knows the layout.

const (
	flagDir   = 1 << 0
	flagFound = 1 << 1
)

var errShort = errors.New("history: short record")

// appendEvent encodes e after b.
func appendEvent(b []byte, e journal.Event) []byte {
	b = binary.AppendUvarint(b, e.Seq)
	b = binary.AppendVarint(b, nanos(e.Time))
	var flags uint64
	if e.IsDir {
		flags |= flagDir
	}
	if e.FoundAtStart {
		flags |= flagFound
	}
	b = binary.AppendUvarint(b, flags)
	for _, s := range [...]string{string(e.Type), e.Path, e.OldPath, string(e.Origin), e.Actor, e.Comm, e.Cgroup} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendVarint(b, e.Size)
	b = binary.AppendVarint(b, nanos(e.Mtime))
	b = binary.AppendUvarint(b, e.Inode)
	b = binary.AppendUvarint(b, uint64(e.Mode))
	b = binary.AppendUvarint(b, uint64(e.Pid))
	b = binary.AppendUvarint(b, uint64(e.Uid))
	return b
}

// decodeEvent is appendEvent's inverse.
func decodeEvent(b []byte) (journal.Event, error) {
	d := decoder{b: b}
	var e journal.Event
	e.Seq = d.uvarint()
	e.Time = fromNanos(d.varint())
	flags := d.uvarint()
	e.IsDir, e.FoundAtStart = flags&flagDir != 0, flags&flagFound != 0
	e.Type = journal.Type(d.str())
	e.Path = d.str()
	e.OldPath = d.str()
	e.Origin = journal.Origin(d.str())
	e.Actor = d.str()
	e.Comm = d.str()
	e.Cgroup = d.str()
	e.Size = d.varint()
	e.Mtime = fromNanos(d.varint())
	e.Inode = d.uvarint()
	e.Mode = fs.FileMode(d.uvarint())
	e.Pid = uint32(d.uvarint())
	e.Uid = uint32(d.uvarint())
	if d.bad {
		return journal.Event{}, errShort
	}
	return e, nil
}

type decoder struct {
	b   []byte
	bad bool
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.bad = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) varint() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.bad = true
		d.b = nil
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) str() string {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad = true
		d.b = nil
		return ""
	}
	s := string(d.b[:n])
	d.b = d.b[n:]
	return s
}

// nanos is t in ns since the epoch, 0 for the zero time.
func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}
