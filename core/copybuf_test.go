package core

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"testing/iotest"
)

// TestCopyToFile: every byte arrives whatever the reader's chunking, and a
// reader's error (a body cut short) is returned, never taken for the end.
func TestCopyToFile(t *testing.T) {
	src := bytes.Repeat([]byte("0123456789abcdef"), (3*copyBufSize+5)/16)
	cut := errors.New("cut")
	cases := []struct {
		name    string
		r       io.Reader
		want    []byte
		wantErr error
	}{
		{"empty", bytes.NewReader(nil), nil, nil},
		{"one byte at a time", iotest.OneByteReader(bytes.NewReader(src[:70000])), src[:70000], nil},
		{"half reads", iotest.HalfReader(bytes.NewReader(src)), src, nil},
		{"exactly one block", bytes.NewReader(src[:copyBufSize]), src[:copyBufSize], nil},
		{"data with EOF", iotest.DataErrReader(bytes.NewReader(src)), src, nil},
		{"unexpected EOF after data", io.MultiReader(bytes.NewReader(src[:1000]), iotest.ErrReader(io.ErrUnexpectedEOF)), src[:1000], io.ErrUnexpectedEOF},
		{"error after a block", io.MultiReader(bytes.NewReader(src[:copyBufSize+10]), iotest.ErrReader(cut)), src[:copyBufSize+10], cut},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "f")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			n, err := copyToFile(f, c.r)
			f.Close()
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("error %v, want %v", err, c.wantErr)
			}
			got, _ := os.ReadFile(p)
			if n != int64(len(c.want)) || !bytes.Equal(got, c.want) {
				t.Errorf("wrote %d bytes (%d in the file), want %d", n, len(got), len(c.want))
			}
		})
	}
}
