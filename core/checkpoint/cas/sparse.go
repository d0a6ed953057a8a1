package cas

import (
	"hash"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// A sparse file (a few KiB of data in a file of a GiB, as a tar's sparse
// entry or a VM image leaves) is copied as it is: only its data extents
// are read and written, found with SEEK_DATA and SEEK_HOLE, and the copy
// is given the source's size, so its holes stay holes. Its hash still
// covers every byte: the holes' zeros are hashed without being read.

// zeros is what a hole hashes as, a buffer at a time.
var zeros = make([]byte, 1<<20)

// CopySparse copies the regular file src to dst (both from offset 0; dst
// empty), keeping src's holes, and feeds every byte of src to h (nil:
// none). It returns the size copied. Where the filesystem cannot tell
// holes (SEEK_DATA refused), it copies every byte.
func CopySparse(dst, src *os.File, h hash.Hash) (int64, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(src.Fd()), &st); err != nil {
		return 0, err
	}
	size := st.Size
	sfd := int(src.Fd())
	for off := int64(0); off < size; {
		data, err := unix.Seek(sfd, off, unix.SEEK_DATA)
		switch {
		case err == unix.ENXIO: // no data past off: the rest is a hole
			data = size
		case err != nil:
			return plainCopy(dst, src, h)
		}
		data = min(data, size)
		if err := hashZeros(h, data-off); err != nil {
			return 0, err
		}
		if data == size {
			break
		}
		end, err := unix.Seek(sfd, data, unix.SEEK_HOLE)
		if err != nil {
			return plainCopy(dst, src, h)
		}
		end = min(end, size)
		if err := copyRange(dst, src, h, data, end-data); err != nil {
			return 0, err
		}
		off = end
	}
	if err := dst.Truncate(size); err != nil {
		return 0, err
	}
	return size, nil
}

// plainCopy copies every byte of src to dst from their starts.
func plainCopy(dst, src *os.File, h hash.Hash) (int64, error) {
	if _, err := src.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	if err := dst.Truncate(0); err != nil {
		return 0, err
	}
	if _, err := dst.Seek(0, io.SeekStart); err != nil {
		return 0, err
	}
	var r io.Reader = src
	if h != nil {
		r = io.TeeReader(src, h)
	}
	return copyBig(dst, r)
}

// copyRange copies n bytes at off from src to the same offset of dst.
func copyRange(dst, src *os.File, h hash.Hash, off, n int64) error {
	var r io.Reader = io.NewSectionReader(src, off, n)
	if h != nil {
		r = io.TeeReader(r, h)
	}
	w := io.NewOffsetWriter(dst, off)
	got, err := copyBig(w, r)
	if err == nil && got != n {
		err = io.ErrUnexpectedEOF // the file shrank: the caller's identity check says so
	}
	return err
}

func hashZeros(h hash.Hash, n int64) error {
	if h == nil {
		return nil
	}
	for n > 0 {
		k := min(n, int64(len(zeros)))
		h.Write(zeros[:k])
		n -= k
	}
	return nil
}
