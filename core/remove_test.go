package core

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestRemove(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"f": "x", "empty/": "", "full/a/b/c": "x", "full/l": "->../keep", "keep/k": "K", "lk": "->keep"})
		for _, tc := range []struct {
			path      string
			recursive bool
			errno     unix.Errno
		}{
			{"missing", false, unix.ENOENT},
			{"full", false, unix.ENOTEMPTY},
			{"/", true, unix.EINVAL},
			{"f", false, 0},
			{"empty", false, 0},
			{"full", true, 0},
			{"lk", false, 0},
		} {
			err := s.Remove(ctx, tc.path, tc.recursive)
			if got, _ := Errno(err); got != tc.errno {
				t.Errorf("Remove(%q, %v) = %v, want errno %v", tc.path, tc.recursive, err, tc.errno)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(root, "keep/k")); string(b) != "K" {
			t.Error("a symlink's target was removed with it")
		}
		ents, _, _ := s.List(ctx, "/", 0)
		if len(ents) != 1 || ents[0].Name != "keep" {
			t.Errorf("root holds %v, want only keep", ents)
		}
	})
}
