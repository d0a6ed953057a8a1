package cas

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPutSparse: a sparse file is stored with its holes (the object takes
// about the blocks of its data) under the hash of every byte, and copied
// back out sparse (CopyTo); files of every shape of hole and data, small
// and large, hash and read back byte for byte.
func TestPutSparse(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name string
		size int64
		data map[int64]string // offset → bytes written there
	}{
		{"hole then data", 64 * mib, map[int64]string{50 * mib: "in the middle"}},
		{"data then hole", 64 * mib, map[int64]string{0: "at the start"}},
		{"data at the end", 64 * mib, map[int64]string{64*mib - 5: "tail!"}},
		{"all hole", 64 * mib, nil},
		{"several extents", 64 * mib, map[int64]string{0: "a", 16 * mib: "b", 32*mib + 7: "c", 63 * mib: "d"}},
		{"not sparse", 3 * mib, map[int64]string{0: string(bytes.Repeat([]byte("x"), 3*mib))}},
		{"empty", 0, nil},
		{"small", 10 << 10, map[int64]string{0: string(bytes.Repeat([]byte("s"), 10<<10))}},
		{"dense at the bound", denseMax, map[int64]string{0: string(bytes.Repeat([]byte("d"), denseMax))}},
		{"small with a hole", denseMax, map[int64]string{0: "head", denseMax - 4: "tail"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, objects := open(t)
			p := filepath.Join(t.TempDir(), "f")
			f, err := os.Create(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			must(t, f.Truncate(c.size))
			want := sha256.New()
			for off, b := range c.data {
				if _, err := f.WriteAt([]byte(b), off); err != nil {
					t.Fatal(err)
				}
			}
			// The logical content, hashed the slow way.
			logical := make([]byte, c.size)
			for off, b := range c.data {
				copy(logical[off:], b)
			}
			want.Write(logical)
			o, err := s.Put(f)
			if err != nil {
				t.Fatal(err)
			}
			if o.Hash != hex.EncodeToString(want.Sum(nil)) || o.Size != c.size {
				t.Fatalf("stored as %s, %d bytes; want the hash of every byte, %d", o.Hash, o.Size, c.size)
			}
			var st unix.Stat_t
			must(t, unix.Stat(filepath.Join(objects, o.Hash[:2], o.Hash[2:]), &st))
			if !o.Clone && st.Blocks*512 > 2*mib+dataLen(c.data) {
				t.Errorf("the object of %d bytes (%d of data) takes %d bytes on disk", c.size, dataLen(c.data), st.Blocks*512)
			}
			out, err := os.Create(filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			if _, err := s.CopyTo(int(out.Fd()), o.Hash); err != nil {
				t.Fatalf("copied back: %v", err)
			}
			got, err := os.ReadFile(out.Name())
			must(t, err)
			if !bytes.Equal(got, logical) {
				t.Fatal("the copy back differs from the source")
			}
			must(t, unix.Fstat(int(out.Fd()), &st))
			if st.Blocks*512 > 2*mib+dataLen(c.data) {
				t.Errorf("the copy back takes %d bytes on disk for %d of data", st.Blocks*512, dataLen(c.data))
			}
		})
	}
}

func dataLen(m map[int64]string) int64 {
	var n int64
	for _, b := range m {
		n += int64(len(b))
	}
	return n
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// CopyTo refuses a name that is not an object's and an object the store
// lacks, and writes nothing.
func TestCopyToRefuses(t *testing.T) {
	s, _ := open(t)
	out, err := os.Create(filepath.Join(t.TempDir(), "out"))
	must(t, err)
	defer out.Close()
	missing := hex.EncodeToString(make([]byte, 32))
	for _, h := range []string{"../../etc/passwd", "", missing} {
		if _, err := s.CopyTo(int(out.Fd()), h); err == nil {
			t.Fatalf("CopyTo %q: no error", h)
		}
	}
	var st unix.Stat_t
	must(t, unix.Fstat(int(out.Fd()), &st))
	if st.Size != 0 {
		t.Fatalf("a refused copy wrote %d bytes", st.Size)
	}
}
