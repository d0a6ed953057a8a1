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
// back out sparse; files of every shape of hole and data hash and read
// back byte for byte.
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
			obj, err := s.OpenObject(o.Hash)
			if err != nil {
				t.Fatal(err)
			}
			defer obj.Close()
			out, err := os.Create(filepath.Join(t.TempDir(), "out"))
			if err != nil {
				t.Fatal(err)
			}
			defer out.Close()
			if n, err := CopySparse(out, obj, nil); err != nil || n != c.size {
				t.Fatalf("copied back %d bytes, %v", n, err)
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
