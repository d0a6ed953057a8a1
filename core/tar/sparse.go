package tar

import (
	"archive/tar"
	"io"
	"os"
	"strings"

	"sandfs/core"

	"golang.org/x/sys/unix"
)

// Sparse tar entries. GNU tar -S stores a file's data blocks and a map of
// where they go (PAX GNU.sparse.* records for formats 0.0, 0.1 and 1.0, or
// the old GNU 'S' type); archive/tar reads the map and hands back the
// logical file, holes expanded to zeros, with hdr.Size the logical size. So
// a 3 KiB archive can declare 1 TiB. Extract checks that declared size
// against what is left of the byte limit before it writes a byte, and writes
// a sparse entry with holes: a 4 KiB block the reader returns all zero is
// skipped with a seek rather than written, so the disk holds the archive's
// data, not its logical size.

// sparseHoleBlock is the unit a hole is made of: a block of this many zero
// bytes, at an offset that is a multiple of it, is seeked over. It is the
// block size of ext4, xfs and tmpfs; data is read and written 64 KiB at a
// time (sparseCopyBuf).
const (
	sparseHoleBlock = 4 << 10
	sparseCopyBuf   = 64 << 10
)

// isSparse reports whether hdr is a GNU sparse entry.
func isSparse(hdr *tar.Header) bool {
	if hdr.Typeflag == tar.TypeGNUSparse {
		return true
	}
	for k := range hdr.PAXRecords {
		if strings.HasPrefix(k, "GNU.sparse.") {
			return true
		}
	}
	return false
}

// copyHoles copies r to f until io.EOF, seeking over every all-zero block
// of sparseHoleBlock bytes, and sets f's size at the end (a file ending in a
// hole). It returns the logical bytes copied.
func copyHoles(f *os.File, r io.Reader) (int64, error) {
	buf := make([]byte, sparseCopyBuf)
	var n int64
	for {
		k, rerr := core.Fill(r, buf)
		if err := writeHoles(f, buf[:k]); err != nil {
			return n, err
		}
		n += int64(k)
		if rerr == io.EOF {
			return n, unix.Ftruncate(int(f.Fd()), n)
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// writeHoles writes b at f's offset, seeking over each all-zero block of
// sparseHoleBlock bytes and writing each run of other blocks at once.
func writeHoles(f *os.File, b []byte) error {
	for len(b) > 0 {
		run := 0 // bytes of data blocks from the start of b
		for run < len(b) {
			end := min(run+sparseHoleBlock, len(b))
			if allZero(b[run:end]) {
				break
			}
			run = end
		}
		if run > 0 {
			if _, err := f.Write(b[:run]); err != nil {
				return err
			}
			b = b[run:]
			continue
		}
		end := min(sparseHoleBlock, len(b))
		if _, err := f.Seek(int64(end), io.SeekCurrent); err != nil {
			return err
		}
		b = b[end:]
	}
	return nil
}

func allZero(b []byte) bool {
	for len(b) >= 8 {
		if b[0]|b[1]|b[2]|b[3]|b[4]|b[5]|b[6]|b[7] != 0 {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}
