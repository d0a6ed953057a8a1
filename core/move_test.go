package core

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestMove(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"a": "A", "b": "B", "d/x": "X", "e/y": "Y", "l": "->a"})
		must(t, os.Mkdir(filepath.Join(root, "empty"), 0o755))
		for _, tc := range []struct {
			from, to string
			o        MoveOptions
			errno    unix.Errno
			errPath  string
			op       string
		}{
			{"a", "b", MoveOptions{}, unix.EEXIST, "/b", OpMove},
			{"missing", "z", MoveOptions{}, unix.ENOENT, "/missing", OpMove},
			{"a", "nodir/z", MoveOptions{}, unix.ENOENT, "/nodir/z", OpMove},
			{"d", "d/sub", MoveOptions{}, unix.EINVAL, "/d", OpMove},
			{"d", "d/sub", MoveOptions{Overwrite: true}, unix.EINVAL, "/d", OpMove},
			{"d/x", "d", MoveOptions{Overwrite: true}, unix.EINVAL, "/d/x", OpMove},
			{"/", "/q", MoveOptions{}, unix.EINVAL, "/", OpMove},
			{"d", "e", MoveOptions{}, unix.EEXIST, "/e", OpMove},
			// Overwrite replaces as rename(2) does, never more.
			{"d", "e", MoveOptions{Overwrite: true}, unix.ENOTEMPTY, "/e", OpReplace},
			{"a", "e", MoveOptions{Overwrite: true}, unix.EISDIR, "/e", OpReplace},
			{"a", "empty", MoveOptions{Overwrite: true}, unix.EISDIR, "/empty", OpReplace},
			{"d", "b", MoveOptions{Overwrite: true}, unix.ENOTDIR, "/b", OpReplace},
		} {
			err := s.Move(ctx, tc.from, tc.to, tc.o)
			var pe *fs.PathError
			if got, _ := Errno(err); got != tc.errno || !errors.As(err, &pe) || pe.Path != tc.errPath || pe.Op != tc.op {
				t.Errorf("Move(%q, %q, %+v) = %v, want %s %s: %v", tc.from, tc.to, tc.o, err, tc.op, tc.errPath, tc.errno)
			}
		}
		for p, c := range map[string]string{"a": "A", "b": "B", "d/x": "X", "e/y": "Y"} {
			if b, err := os.ReadFile(filepath.Join(root, p)); string(b) != c {
				t.Errorf("%s = %q, %v after the refused moves; want %q", p, b, err, c)
			}
		}
		seq := s.Journal().Seq()
		for _, step := range []struct {
			from, to string
			o        MoveOptions
		}{
			{"a", "b", MoveOptions{Overwrite: true}},
			{"b", "n/e/w", MoveOptions{MkdirParents: true}},
			{"d", "empty", MoveOptions{Overwrite: true}},
			{"l", "l2", MoveOptions{}},
			{"l2", "l2", MoveOptions{Overwrite: true}},
		} {
			if err := s.Move(ctx, step.from, step.to, step.o); err != nil {
				t.Fatalf("Move(%q, %q): %v", step.from, step.to, err)
			}
		}
		want := map[string]string{"n/e/w": "A", "empty/x": "X", "e/y": "Y"}
		for p, c := range want {
			if b, err := os.ReadFile(filepath.Join(root, p)); string(b) != c {
				t.Errorf("%s = %q, %v; want %q", p, b, err, c)
			}
		}
		for _, gone := range []string{"a", "b", "d", "l"} {
			if _, err := os.Lstat(filepath.Join(root, gone)); !os.IsNotExist(err) {
				t.Errorf("%s still there", gone)
			}
		}
		if target, _ := os.Readlink(filepath.Join(root, "l2")); target != "a" {
			t.Errorf("l2 -> %q, want the symlink moved as itself", target)
		}
		// What a move replaced is told removed, before the rename.
		es, _ := s.Journal().Since(seq, 100)
		got := fmtEvents(es)
		want4 := "api remove /b\napi rename /b <- /a\napi create /n\napi create /n/e\napi rename /n/e/w <- /b\napi remove /empty\napi rename /empty <- /d\napi rename /l2 <- /l"
		if !strings.Contains(got, want4) {
			t.Errorf("events:\n%s\nwant:\n%s", got, want4)
		}
	})
}
