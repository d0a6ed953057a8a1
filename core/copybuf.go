package core

import (
	"io"
	"os"
	"sync"
)

// copyBufSize is the block a write into a file is made of: io.Copy into an
// *os.File from a socket body falls back to 32 KiB reads and writes, one
// write syscall per read; filling 1 MiB first makes 32x fewer writes.
const copyBufSize = 1 << 20

var copyBufPool = sync.Pool{New: func() any { b := make([]byte, copyBufSize); return &b }}

// copyToFile copies r into f in blocks of copyBufSize, each filled before
// it is written, until r's io.EOF; any other error of r (a body cut short
// is io.ErrUnexpectedEOF) is returned. It returns the bytes written.
func copyToFile(f *os.File, r io.Reader) (int64, error) {
	bp := copyBufPool.Get().(*[]byte)
	defer copyBufPool.Put(bp)
	buf := *bp
	var n int64
	for {
		k, rerr := Fill(r, buf)
		if k > 0 {
			w, werr := f.Write(buf[:k])
			n += int64(w)
			if werr != nil {
				return n, werr
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// Fill reads r into buf until buf is full or r fails (io.EOF included), and
// returns the bytes read with r's error: a block is written whole, never in
// the pieces a network body arrives in.
func Fill(r io.Reader, buf []byte) (int, error) {
	k := 0
	var err error
	for k < len(buf) && err == nil {
		var m int
		m, err = r.Read(buf[k:])
		k += m
	}
	return k, err
}
