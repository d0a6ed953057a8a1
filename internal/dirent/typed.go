package dirent

import (
	"encoding/binary"
	"io"

	"golang.org/x/sys/unix"
)

// Entry is one entry of a directory: its name and its kind as the type
// bits of a mode (unix.S_IFDIR, S_IFREG, S_IFLNK, …). The kind is the
// directory's own word for it (d_type), so no entry is stat'ed, except
// where the filesystem does not tell (DT_UNKNOWN): then an fstatat of the
// name beneath the directory, never following a symlink. Type is 0 when
// that failed too (the entry went meanwhile).
type Entry struct {
	Name string
	Type uint32
}

// IsDir says whether the entry is a directory (a symlink to one is not).
func (e Entry) IsDir() bool { return e.Type == unix.S_IFDIR }

// Reader reads the entries of a directory open at a descriptor, a batch
// at a time, so a directory of any size costs a bounded buffer. os.File's
// ReadDir would do it too, but where the filesystem does not tell a kind
// it stats the name joined to the file's name, a path it resolves from
// the process's root, not beneath the directory.
type Reader struct {
	fd     int
	buf    []byte
	off, n int
	eof    bool
}

// NewReader reads the directory open at fd from its current offset; the
// caller keeps fd and closes it after the last read.
func NewReader(fd int) *Reader { return &Reader{fd: fd, buf: make([]byte, 16<<10)} }

// Next answers up to max entries ("." and ".." left out), and io.EOF once
// none is left.
func (r *Reader) Next(max int) ([]Entry, error) {
	var out []Entry
	for len(out) < max {
		if r.off >= r.n {
			if r.eof {
				break
			}
			n, err := unix.Getdents(r.fd, r.buf)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return out, err
			}
			if n <= 0 {
				r.eof = true
				break
			}
			r.off, r.n = 0, n
		}
		// struct linux_dirent64: d_ino u64, d_off s64, d_reclen u16,
		// d_type u8, then the name, NUL-terminated, within d_reclen.
		rec := r.buf[r.off:r.n]
		if len(rec) < 19 {
			r.off = r.n
			continue
		}
		reclen := int(binary.NativeEndian.Uint16(rec[16:18]))
		if reclen < 19 || reclen > len(rec) {
			r.off = r.n // a record the kernel would not write: the rest of the batch is dropped
			continue
		}
		r.off += reclen
		ino := binary.NativeEndian.Uint64(rec[0:8])
		name := rec[19:reclen]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if ino == 0 || len(name) == 0 || string(name) == "." || string(name) == ".." {
			continue
		}
		e := Entry{Name: string(name), Type: kind(rec[18])}
		if rec[18] == unix.DT_UNKNOWN {
			var st unix.Stat_t
			if unix.Fstatat(r.fd, e.Name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
				e.Type = st.Mode & unix.S_IFMT
			}
		}
		out = append(out, e)
	}
	if len(out) == 0 && r.eof {
		return nil, io.EOF
	}
	return out, nil
}

// kind is the mode type bits of a d_type.
func kind(t uint8) uint32 {
	switch t {
	case unix.DT_DIR:
		return unix.S_IFDIR
	case unix.DT_REG:
		return unix.S_IFREG
	case unix.DT_LNK:
		return unix.S_IFLNK
	case unix.DT_FIFO:
		return unix.S_IFIFO
	case unix.DT_SOCK:
		return unix.S_IFSOCK
	case unix.DT_CHR:
		return unix.S_IFCHR
	case unix.DT_BLK:
		return unix.S_IFBLK
	}
	return 0
}

// All reads every entry of the directory open at fd from its current
// offset: for a walk that sorts a directory's entries, which must hold
// them all anyway.
func All(fd int) ([]Entry, error) {
	r := NewReader(fd)
	var all []Entry
	for {
		ents, err := r.Next(1024)
		all = append(all, ents...)
		if err == io.EOF {
			return all, nil
		}
		if err != nil {
			return all, err
		}
	}
}
