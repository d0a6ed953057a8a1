package cas

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// denseMax is the size up to which an object with no hole is copied by
// one read and one write. A restore or a take-up writes a tree of mostly
// small files, where the copy's system calls (the extent seeks, a
// truncate, a duplicated descriptor) cost more than its bytes; a file
// whose blocks cover its size has no hole for them to keep.
const denseMax = 256 << 10

// CopyTo puts the object h in the empty file dst (open for writing): a
// reflink where the filesystem can make one (cloned), else a copy of its
// bytes that keeps its holes.
func (s *Store) CopyTo(dst int, h string) (cloned bool, err error) {
	src, err := s.openObject(h)
	if err != nil {
		return false, err
	}
	defer unix.Close(src)
	return CopyFile(dst, src)
}

// CopyFile is CopyTo from src, a file open for reading that nothing
// writes meanwhile (the caller keeps both descriptors).
func CopyFile(dst, src int) (cloned bool, err error) {
	if unix.IoctlFileClone(dst, src) == nil {
		return true, nil
	}
	var st unix.Stat_t
	if err := unix.Fstat(src, &st); err != nil {
		return false, err
	}
	if st.Size <= denseMax && st.Blocks*512 >= st.Size {
		return false, copyDense(dst, src, int(st.Size))
	}
	var files [2]*os.File
	for i, fd := range []int{dst, src} {
		dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0) // the caller keeps fd
		if err != nil {
			return false, err
		}
		files[i] = os.NewFile(uintptr(dup), "copy")
		defer files[i].Close()
	}
	_, err = CopySparse(files[0], files[1], nil)
	return false, err
}

// copyDense copies the size bytes of src to dst, from their starts.
func copyDense(dst, src, size int) error {
	b := bufs.Get().(*[]byte)
	defer bufs.Put(b)
	buf := (*b)[:size]
	for got := 0; got < size; {
		k, err := unix.Pread(src, buf[got:], int64(got))
		if err != nil {
			return err
		}
		if k == 0 {
			return io.ErrUnexpectedEOF // the source shrank: never, nothing writes it
		}
		got += k
	}
	for put := 0; put < size; {
		k, err := unix.Pwrite(dst, buf[put:], int64(put))
		if err != nil {
			return err
		}
		if k == 0 {
			return io.ErrShortWrite
		}
		put += k
	}
	return nil
}
