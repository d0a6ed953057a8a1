package cas

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func open(t *testing.T) (*Store, string) {
	dir := t.TempDir()
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	s, err := Open(fd, "objects")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, filepath.Join(dir, "objects")
}

func TestPutDedupOpenSweep(t *testing.T) {
	s, dir := open(t)
	sum := sha256.Sum256([]byte("hello"))
	want := hex.EncodeToString(sum[:])
	for i, added := range []bool{true, false} {
		o, err := s.PutBytes([]byte("hello"))
		if err != nil {
			t.Fatal(err)
		}
		if o.Hash != want || o.Size != 5 || o.Added != added {
			t.Errorf("put %d: %+v", i, o)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, want[:2], want[2:])); err != nil {
		t.Errorf("object not at ab/cdef…: %v", err)
	}
	f, err := s.OpenObject(want)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(f)
	f.Close()
	if string(b) != "hello" {
		t.Errorf("read %q", b)
	}
	for _, bad := range []string{"", "../../etc/passwd", want[:63] + "G"} {
		if _, err := s.OpenObject(bad); err == nil {
			t.Errorf("opened %q", bad)
		}
	}
	other, _ := s.PutBytes([]byte("other"))
	before, _ := s.Bytes()
	n, bytes, disk, err := s.Sweep(func(h string) bool { return h == want })
	after, _ := s.Bytes()
	if err != nil || n != 1 || bytes != 5 || disk != before-after || s.Has(other.Hash) || !s.Has(want) {
		t.Errorf("sweep: %d objects, %d bytes, %d on disk (the store's size went from %d to %d), %v", n, bytes, disk, before, after, err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if !e.IsDir() {
			t.Errorf("temp left: %s", e.Name())
		}
	}
}
