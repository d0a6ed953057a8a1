package core

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMove(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"a": "A", "b": "B", "d/x": "X", "e/y": "Y", "l": "->a"})
		for _, tc := range []struct {
			from, to string
			o        MoveOptions
			errno    unix.Errno
			errPath  string
		}{
			{"a", "b", MoveOptions{}, unix.EEXIST, "/b"},
			{"missing", "z", MoveOptions{}, unix.ENOENT, "/missing"},
			{"a", "nodir/z", MoveOptions{}, unix.ENOENT, "/nodir/z"},
			{"d", "d/sub", MoveOptions{}, unix.EINVAL, "/d"},
			{"d", "d/sub", MoveOptions{Overwrite: true}, unix.EINVAL, "/d"},
			{"d/x", "d", MoveOptions{Overwrite: true}, unix.EINVAL, "/d/x"},
			{"/", "/q", MoveOptions{}, unix.EINVAL, "/"},
			{"d", "e", MoveOptions{}, unix.EEXIST, "/e"},
		} {
			err := s.Move(ctx, tc.from, tc.to, tc.o)
			var pe *fs.PathError
			if got, _ := Errno(err); got != tc.errno || !errors.As(err, &pe) || pe.Path != tc.errPath {
				t.Errorf("Move(%q, %q, %+v) = %v, want errno %v on %s", tc.from, tc.to, tc.o, err, tc.errno, tc.errPath)
			}
		}
		if b, _ := os.ReadFile(filepath.Join(root, "b")); string(b) != "B" {
			t.Errorf("b = %q after a refused move", b)
		}
		for _, step := range []struct {
			from, to string
			o        MoveOptions
		}{
			{"a", "b", MoveOptions{Overwrite: true}},
			{"b", "n/e/w", MoveOptions{MkdirParents: true}},
			{"d", "e", MoveOptions{Overwrite: true}},
			{"l", "l2", MoveOptions{}},
		} {
			if err := s.Move(ctx, step.from, step.to, step.o); err != nil {
				t.Fatalf("Move(%q, %q): %v", step.from, step.to, err)
			}
		}
		want := map[string]string{"n/e/w": "A", "e/x": "X"}
		for p, c := range want {
			if b, err := os.ReadFile(filepath.Join(root, p)); string(b) != c {
				t.Errorf("%s = %q, %v; want %q", p, b, err, c)
			}
		}
		for _, gone := range []string{"a", "b", "d", "e/y", "l"} {
			if _, err := os.Lstat(filepath.Join(root, gone)); !os.IsNotExist(err) {
				t.Errorf("%s still there", gone)
			}
		}
		if target, _ := os.Readlink(filepath.Join(root, "l2")); target != "a" {
			t.Errorf("l2 -> %q, want the symlink moved as itself", target)
		}
	})
}
