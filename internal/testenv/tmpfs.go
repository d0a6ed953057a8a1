package testenv

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// Tmpfs mounts a tmpfs with the given options ("size=1m", "nr_inodes=16")
// on a new temp directory and returns it; it is unmounted when the test
// ends. A small one is how a test fills a disk: it needs root (CI is).
func Tmpfs(t testing.TB, options string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		Skip(t, nil, "mounting a tmpfs needs root")
	}
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "mode=0755,"+options); err != nil {
		Skip(t, nil, "mount tmpfs %s: %v", options, err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount the test's tmpfs %s: %v", dir, err)
		}
	})
	return dir
}

// Fill writes a file into dir until its filesystem is full, and returns
// the file's path: removing it gives the space back.
func Fill(t testing.TB, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "filler")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	for {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, unix.ENOSPC) {
				t.Fatal(err)
			}
			return p
		}
	}
}
