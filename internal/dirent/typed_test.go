package dirent

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestReader: every entry of a directory larger than the reader's buffer
// is answered once, with its kind, in batches of at most the size asked,
// and io.EOF after the last.
func TestReader(t *testing.T) {
	dir := t.TempDir()
	want := map[string]uint32{"sub": unix.S_IFDIR, "link": unix.S_IFLNK, "fifo": unix.S_IFIFO, "dirlink": unix.S_IFLNK}
	os.Mkdir(filepath.Join(dir, "sub"), 0o755)
	os.Symlink("nowhere", filepath.Join(dir, "link"))
	os.Symlink("sub", filepath.Join(dir, "dirlink"))
	if err := unix.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2000; i++ { // about 200 KiB of records: many buffers
		n := fmt.Sprintf("f%04d-%s", i, strings.Repeat("x", 80))
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		want[n] = unix.S_IFREG
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	r := NewReader(fd)
	got := map[string]uint32{}
	for {
		batch, err := r.Next(100)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 0 || len(batch) > 100 {
			t.Fatalf("a batch of %d entries, want 1 to 100", len(batch))
		}
		for _, e := range batch {
			if _, dup := got[e.Name]; dup {
				t.Errorf("%s answered twice", e.Name)
			}
			got[e.Name] = e.Type
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d entries, want %d", len(got), len(want))
	}
	for n, k := range want {
		if got[n] != k {
			t.Errorf("%s: kind %o, want %o", n, got[n], k)
		}
	}
	if (Entry{Name: "dirlink", Type: got["dirlink"]}).IsDir() || !(Entry{Name: "sub", Type: got["sub"]}).IsDir() {
		t.Error("IsDir: a symlink to a directory is not one, a directory is")
	}
	if b, err := r.Next(10); err != io.EOF || b != nil {
		t.Errorf("after the end: %v, %v; want io.EOF", b, err)
	}
}
