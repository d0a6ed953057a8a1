package core

import (
	"bytes"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/internal/safeat"
	"sandfs/internal/testenv"
)

// TestCopyXattrsGrowingValue: an attribute whose value grows between the
// size probe and the read is copied, not skipped. A writer flips the
// source's value between 1 byte and 4,000 while copyXattrs runs: every
// copy must carry the attribute, with one of the two values.
func TestCopyXattrsGrowingValue(t *testing.T) {
	dir := t.TempDir()
	src, dst := filepath.Join(dir, "src"), filepath.Join(dir, "dst")
	for _, p := range []string{src, dst} {
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	small, big := []byte("s"), bytes.Repeat([]byte("b"), 4000)
	if err := unix.Setxattr(src, "user.grow", small, 0); err != nil {
		testenv.Skip(t, nil, "no user xattrs on this filesystem: %v", err)
	}
	open := func(p string) int {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	sfd, dfd := open(src), open(dst)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			v := small
			if i%2 == 1 {
				v = big
			}
			unix.Setxattr(src, "user.grow", v, 0)
		}
	}()
	defer func() { close(stop); wg.Wait() }()
	for i := 0; i < 3000; i++ {
		unix.Removexattr(dst, "user.grow")
		if err := copyXattrs(sfd, dfd); err != nil {
			t.Fatal(err)
		}
		got, err := safeat.XattrValue(dfd, "user.grow")
		if err != nil {
			t.Fatalf("copy %d: the attribute was not copied: %v", i, err)
		}
		if !bytes.Equal(got, small) && !bytes.Equal(got, big) {
			t.Fatalf("copy %d: value of %d bytes, want 1 or 4000", i, len(got))
		}
	}
}
