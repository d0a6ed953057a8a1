package history

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// The tail is a file mapped shared into memory: each appended event is
// copied into it under the journal's lock, which costs what encoding the
// event costs, no system call. The page cache holds what was copied the
// moment it is copied, so a daemon killed (kill -9, a panic) loses no event
// it appended; the store then takes the events in batches, off every
// request's path. A power loss can lose what neither the store nor the
// kernel's writeback had put on disk: the tail is not fsynced.
//
// Records follow one another from offset 0: a little-endian u32 length, a
// u32 CRC-32C of the payload, the payload (codec.go), and eight zero bytes
// after the last. When the next record does not fit, writing starts again
// at 0, once the store holds every event in the tail. At open, the records
// are read from 0 while each is whole and its seq higher than the one
// before; those the store lacks are given to it.

const tailSize = 32 << 20

type tail struct {
	fd   int
	mem  []byte
	pos  int
	last uint64 // seq of the last record written
	buf  []byte // scratch for encoding
}

func openTail(dirfd int, name string) (*tail, error) {
	fd, err := unix.Openat(dirfd, name, unix.O_RDWR|unix.O_CREAT|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("history tail: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, fmt.Errorf("history tail %s is not a regular file", name)
	}
	if st.Size != tailSize {
		if err := unix.Ftruncate(fd, tailSize); err != nil {
			unix.Close(fd)
			return nil, fmt.Errorf("history tail: %w", err)
		}
	}
	// Every block of the mapping is reserved now: a store into a page of a
	// sparse file needs a block then, and on a full filesystem the kernel
	// answers that with SIGBUS, which kills the daemon. Reserved, a full
	// disk is an error here, at open, never a signal at a write.
	if err := unix.Fallocate(fd, 0, 0, tailSize); err != nil && err != unix.EOPNOTSUPP {
		unix.Close(fd)
		return nil, fmt.Errorf("history tail: reserving its %d MiB: %w", tailSize>>20, err)
	}
	mem, err := unix.Mmap(fd, 0, tailSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("history tail: mmap: %w", err)
	}
	return &tail{fd: fd, mem: mem}, nil
}

// records returns the whole records from offset 0, in order, and where
// they end: clean when a terminator ends them (eight zero bytes, which
// every write puts after its record, and which a kill cannot tear: the
// length is stored last), else at a torn or corrupt record (a power loss,
// a damaged disk, a file edited), after which events that were handed out
// may be missing.
func (t *tail) records() (out []journal.Event, end int, clean bool) {
	var prev uint64
	for b := t.mem; ; {
		end = len(t.mem) - len(b)
		e, rest, err := nextRecord(b)
		if err != nil || e.Seq <= prev {
			return out, end, len(b) < recordHead || binary.LittleEndian.Uint64(b) == 0
		}
		out = append(out, e)
		prev, b = e.Seq, rest
	}
}

// mostRecords bounds how many records the tail's bytes from offset end on
// could have held: a record is at least its head and one byte.
func mostRecords(end int) uint64 { return uint64((tailSize - end) / (recordHead + 1)) }

// reset forgets every record: the store holds them.
func (t *tail) reset() {
	clear(t.mem[:recordHead])
	t.pos = 0
}

// fits reports whether e's record fits after pos; encoded keeps the
// encoding for write.
func (t *tail) fits(e journal.Event) bool {
	t.buf = appendEvent(t.buf[:0], e)
	return t.pos+2*recordHead+len(t.buf) <= len(t.mem)
}

// write copies the record fits encoded at pos, then the terminator.
func (t *tail) write(seq uint64) {
	n := len(t.buf)
	end := t.pos + recordHead + n
	clear(t.mem[end : end+recordHead])
	copy(t.mem[t.pos+recordHead:], t.buf)
	binary.LittleEndian.PutUint32(t.mem[t.pos+4:], crc32.Checksum(t.buf, castagnoli))
	binary.LittleEndian.PutUint32(t.mem[t.pos:], uint32(n))
	t.pos = end
	t.last = seq
}

// release takes every page of the tail out of this process's mapping,
// once open has read it: reading the records from 0 faulted in the pages
// the kernel's readahead and fault-around brought, 64 KiB even of an empty
// tail, which an idle sandbox kept in its RSS for good. The mapping is
// shared, so nothing written is lost (the page cache holds it); the next
// write faults in the one page it writes.
func (t *tail) release() {
	unix.Madvise(t.mem, unix.MADV_DONTNEED)
}

func (t *tail) close() {
	unix.Munmap(t.mem)
	unix.Close(t.fd)
}
