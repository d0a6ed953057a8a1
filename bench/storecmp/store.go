package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
)

// rec is one journal event, the shape core/journal keeps.
type rec struct {
	Seq     uint64
	Time    int64 // ns since the epoch
	Origin  string
	Type    string
	Path    string
	OldPath string
	Actor   string
	Pid     uint32
	Uid     uint32
	Size    int64
	Mtime   int64
	Inode   uint64
	Comm    string
}

// store is what the journal needs of an embedded store.
type store interface {
	// Append writes the batch in one transaction; records are in seq order.
	Append(batch []rec) error
	// Scan calls fn for every record with seq >= from, in seq order, decoded.
	Scan(from uint64, fn func(*rec) error) error
	// SeqAtTime returns the first seq whose time is >= t (0 when none).
	SeqAtTime(t int64) (uint64, error)
	// PruneBefore deletes every record with seq < seq.
	PruneBefore(seq uint64) error
	// Compact checkpoints or compacts where the store has such a step.
	Compact() error
	Close() error
}

// opener opens a store in an empty directory.
type opener struct {
	name string
	open func(dir string, durable bool) (store, error)
	// relaxedOnly: the store never fsyncs per commit, so it runs with the
	// no-sync group only.
	relaxedOnly bool
}

var stores = []opener{
	{"sqlite-cols", func(d string, s bool) (store, error) { return openSQLite(d, fullOrOff(s), false) }, false},
	{"sqlite-blob", func(d string, s bool) (store, error) { return openSQLite(d, fullOrOff(s), true) }, false},
	// The lead's setting: WAL + synchronous=NORMAL, no fsync per commit.
	{"sqlite-blob NORMAL", func(d string, _ bool) (store, error) { return openSQLite(d, "NORMAL", true) }, true},
	{"bbolt", openBolt, false},
	{"pebble", openPebble, false},
}

func fullOrOff(durable bool) string {
	if durable {
		return "FULL"
	}
	return "OFF"
}

// dirSize is the sum of the sizes of the regular files under dir.
func dirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil // a file the store just removed (Pebble's obsolete tables)
		}
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	return n, err
}

// encode appends the compact form of r, without Seq (the key holds it).
func encode(b []byte, r *rec) []byte {
	b = binary.AppendVarint(b, r.Time)
	for _, s := range [...]string{r.Origin, r.Type, r.Path, r.OldPath, r.Actor, r.Comm} {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	b = binary.AppendUvarint(b, uint64(r.Pid))
	b = binary.AppendUvarint(b, uint64(r.Uid))
	b = binary.AppendVarint(b, r.Size)
	b = binary.AppendVarint(b, r.Mtime)
	return binary.AppendUvarint(b, r.Inode)
}

var errShort = errors.New("short record")

// decode fills r (but Seq) from b.
func decode(b []byte, r *rec) error {
	var err error
	vi := func() int64 {
		v, n := binary.Varint(b)
		if n <= 0 {
			err = errShort
			return 0
		}
		b = b[n:]
		return v
	}
	vu := func() uint64 {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			err = errShort
			return 0
		}
		b = b[n:]
		return v
	}
	str := func() string {
		l := vu()
		if err != nil || l > uint64(len(b)) {
			err = errShort
			return ""
		}
		s := string(b[:l])
		b = b[l:]
		return s
	}
	r.Time = vi()
	r.Origin, r.Type, r.Path, r.OldPath, r.Actor, r.Comm = str(), str(), str(), str(), str(), str()
	r.Pid, r.Uid = uint32(vu()), uint32(vu())
	r.Size, r.Mtime = vi(), vi()
	r.Inode = vu()
	if err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	return nil
}

func seqKey(b []byte, seq uint64) []byte { return binary.BigEndian.AppendUint64(b, seq) }

// timeKey orders by time, then seq, so equal times keep seq order.
func timeKey(b []byte, t int64, seq uint64) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(t)^(1<<63))
	return binary.BigEndian.AppendUint64(b, seq)
}
