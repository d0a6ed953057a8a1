package history

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
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

// A record is an event framed to be read back from a run of them: a
// little-endian u32 length, a u32 CRC-32C of the payload, the payload.
const recordHead = 8

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendRecord appends e's record to b.
func appendRecord(b []byte, e journal.Event) []byte {
	at := len(b)
	b = append(b, make([]byte, recordHead)...)
	b = appendEvent(b, e)
	payload := b[at+recordHead:]
	binary.LittleEndian.PutUint32(b[at:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(b[at+4:], crc32.Checksum(payload, castagnoli))
	return b
}

var errBadRecord = errors.New("history: a torn or corrupt record")

// nextRecord reads the record at the start of b: the event, and the rest.
func nextRecord(b []byte) (journal.Event, []byte, error) { return nextRecordWith(b, nil) }

// nextRecordWith is nextRecord decoding with in.
func nextRecordWith(b []byte, in interner) (journal.Event, []byte, error) {
	if len(b) < recordHead {
		return journal.Event{}, nil, errBadRecord
	}
	n := int(binary.LittleEndian.Uint32(b))
	sum := binary.LittleEndian.Uint32(b[4:])
	if n == 0 || recordHead+n > len(b) {
		return journal.Event{}, nil, errBadRecord
	}
	payload := b[recordHead : recordHead+n]
	if crc32.Checksum(payload, castagnoli) != sum {
		return journal.Event{}, nil, errBadRecord
	}
	e, err := decodeWith(payload, in)
	return e, b[recordHead+n:], err
}

// decodeEvent is appendEvent's inverse.
func decodeEvent(b []byte) (journal.Event, error) {
	return decodeWith(b, nil)
}

// interner keeps one copy of the strings that repeat from event to event
// (type, origin, actor, comm, cgroup), so a scan allocates them once.
type interner map[string]string

func (in interner) str(b []byte) string {
	if s, ok := in[string(b)]; ok { // no allocation for the lookup
		return s
	}
	s := string(b)
	if len(in) < 4096 {
		in[s] = s
	}
	return s
}

// decodeWith decodes with in (nil: no interning).
func decodeWith(b []byte, in interner) (journal.Event, error) {
	d := decoder{b: b, in: in}
	var e journal.Event
	e.Seq = d.uvarint()
	e.Time = fromNanos(d.varint())
	flags := d.uvarint()
	e.IsDir, e.FoundAtStart = flags&flagDir != 0, flags&flagFound != 0
	e.Type = journal.Type(d.short())
	e.Path = d.str()
	e.OldPath = d.str()
	e.Origin = journal.Origin(d.short())
	e.Actor = d.short()
	e.Comm = d.short()
	e.Cgroup = d.short()
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
	in  interner
}

// short is str for a string that repeats, interned when the decoder has
// an interner.
func (d *decoder) short() string {
	if d.in == nil {
		return d.str()
	}
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.bad = true
		d.b = nil
		return ""
	}
	if n == 0 {
		return ""
	}
	s := d.in.str(d.b[:n])
	d.b = d.b[n:]
	return s
}

func (d *decoder) uvarint() uint64 { return next(d, binary.Uvarint) }

func (d *decoder) varint() int64 { return next(d, binary.Varint) }

// next reads one varint with read, marking the decoder bad at a short or
// overlong one.
func next[T uint64 | int64](d *decoder, read func([]byte) (T, int)) T {
	v, n := read(d.b)
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
