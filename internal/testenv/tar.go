package testenv

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"
	"time"
)

// TarEntry is one entry of a test archive: a regular file unless Typ
// says otherwise, mode 0644 unless Mode does.
type TarEntry struct {
	Name, Body, Link string
	Typ              byte
	Mode             int64
}

// TarOf is the uncompressed PAX archive of entries.
func TarOf(t testing.TB, entries []TarEntry) io.Reader {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Typeflag: e.Typ, Linkname: e.Link, Mode: e.Mode, Size: int64(len(e.Body)), ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte(e.Body))
		}
	}
	tw.Close()
	return &buf
}
