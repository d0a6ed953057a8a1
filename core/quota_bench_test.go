package core

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// BenchmarkQuotaWriteAt: a mirror WRITE of 4 KiB through the handle (the
// growth reserved, the size counted) against the bare pwrite it makes.
func BenchmarkQuotaWriteAt(b *testing.B) {
	buf := make([]byte, 4096)
	for _, c := range []struct {
		name  string
		quota Quota
	}{{"no quota", Quota{}}, {"byte quota", Quota{Bytes: 1 << 40}}} {
		b.Run(c.name, func(b *testing.B) {
			root := b.TempDir()
			os.WriteFile(filepath.Join(root, "f"), nil, 0o644)
			s := openScanned(b, root)
			s.Quota().Set(c.quota)
			h, err := s.RootDir().Open(ctx, "f", unix.O_WRONLY)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { h.Release(ctx); h.File().Close() }()
			b.SetBytes(int64(len(buf)))
			for i := 0; b.Loop(); i++ {
				if _, err := h.WriteAt(buf, int64(i%1024)*4096); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("bare pwrite", func(b *testing.B) {
		f, err := os.Create(filepath.Join(b.TempDir(), "f"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		b.SetBytes(int64(len(buf)))
		for i := 0; b.Loop(); i++ {
			if _, err := unix.Pwrite(int(f.Fd()), buf, int64(i%1024)*4096); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkQuotaScan: one scan of a tree of 100 directories of 100 files.
func BenchmarkQuotaScan(b *testing.B) {
	root := b.TempDir()
	for d := range 100 {
		dir := filepath.Join(root, fmt.Sprintf("d%02d", d))
		os.Mkdir(dir, 0o755)
		for f := range 100 {
			os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d", f)), []byte("x"), 0o644)
		}
	}
	s := openScanned(b, root)
	for b.Loop() {
		if _, err := s.Quota().Scan(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if u := s.Quota().Usage(); u.Entries != 10100 || u.Bytes != 10000 {
		b.Fatalf("usage %+v", u)
	}
}
