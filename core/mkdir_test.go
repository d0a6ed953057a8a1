package core

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

func TestMkdir(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"f": "x", "d/": "", "ld": "->d", "dangling": "->nowhere"})
		for _, tc := range []struct {
			path    string
			parents bool
			errno   unix.Errno
		}{
			{"/a", false, 0},
			{"/a", false, unix.EEXIST},
			{"/a", true, 0},
			{"/b/c/d", false, unix.ENOENT},
			{"/b/c/d", true, 0},
			{"/f", true, unix.EEXIST},
			{"/f/x", true, unix.ENOTDIR},
			{"/ld/inside", true, 0},
			{"/dangling", true, unix.EEXIST},
			{"/", true, 0},
			{"/", false, unix.EEXIST},
		} {
			err := s.Mkdir(ctx, tc.path, tc.parents, 0)
			if got, _ := Errno(err); got != tc.errno {
				t.Errorf("Mkdir(%q, %v) = %v, want errno %v", tc.path, tc.parents, err, tc.errno)
			}
		}
		for _, d := range []string{"a", "b/c/d", "d/inside"} {
			if st, err := os.Lstat(filepath.Join(root, d)); err != nil || !st.IsDir() {
				t.Errorf("%s not a directory: %v", d, err)
			}
		}
	})
}

// TestMkdirFullDisk: a mkdir -p that runs out of inodes says so (ENOSPC),
// not ENOENT, and leaves what it made.
func TestMkdirFullDisk(t *testing.T) {
	root := testenv.Tmpfs(t, "nr_inodes=6")
	s, err := Open("default", root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var last error
	for i := 0; i < 8 && last == nil; i++ {
		last = s.Mkdir(ctx, fmt.Sprintf("/d%d/a/b", i), true, 0o755)
	}
	if !errors.Is(last, unix.ENOSPC) {
		t.Fatalf("mkdir -p on a full filesystem: %v, want ENOSPC", last)
	}
	if err := s.Mkdir(ctx, "/one-more", false, 0o755); !errors.Is(err, unix.ENOSPC) {
		t.Errorf("mkdir on a full filesystem: %v, want ENOSPC", err)
	}
}
