package core

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestListStatOpen(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"d/b": "bb", "d/a": "a", "d/c/": "", "d/l": "->b", "f": "ffff"})
		syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644)
		mtime := time.Unix(1600000000, 0)
		os.Chtimes(filepath.Join(root, "f"), mtime, mtime)

		ents, trunc, err := s.List(ctx, "d", 0)
		if err != nil || trunc {
			t.Fatal(err, trunc)
		}
		var got []string
		for _, e := range ents {
			got = append(got, e.Path+":"+e.Mode.Type().String())
		}
		if strings.Join(got, " ") != "/d/a:---------- /d/b:---------- /d/c:d--------- /d/l:L---------" {
			t.Errorf("List = %v", got)
		}
		if ents, trunc, _ := s.List(ctx, "d", 2); len(ents) != 2 || !trunc {
			t.Errorf("List limit 2 = %d entries, truncated %v", len(ents), trunc)
		}
		if _, _, err := s.List(ctx, "f", 0); !errors.Is(err, unix.ENOTDIR) {
			t.Errorf("List of a file: %v, want ENOTDIR", err)
		}
		info, err := s.Stat(ctx, "d/l")
		if err != nil || info.Size != 2 || !info.IsRegular() || info.Path != "/d/l" {
			t.Errorf("Stat(d/l) = %+v, %v", info, err)
		}
		if info, _ := s.Lstat(ctx, "d/l"); !info.IsSymlink() {
			t.Errorf("Lstat(d/l) = %+v", info)
		}
		if info, _ := s.Stat(ctx, "f"); !info.ModTime.Equal(mtime) || info.Name != "f" {
			t.Errorf("Stat(f) = %+v", info)
		}
		f, info, err := s.OpenFile(ctx, "/f")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != "ffff" || info.Size != 4 {
			t.Errorf("OpenFile(f) read %q, info %+v", b, info)
		}
		if _, _, err := s.OpenFile(ctx, "d"); !errors.Is(err, unix.EISDIR) {
			t.Errorf("OpenFile(dir) = %v, want EISDIR", err)
		}
		if _, _, err := s.OpenFile(ctx, "fifo"); !errors.Is(err, unix.EINVAL) {
			t.Errorf("OpenFile(fifo) = %v, want EINVAL (and no block)", err)
		}
	})
}

// TestReadlink: a link's target as stored, dangling or climbing too; a
// file is EINVAL; a link on the way is resolved within the root.
func TestReadlink(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"d/l": "->b", "d/up": "->../../../etc/passwd", "f": "x"})
		if err := os.Symlink("/", filepath.Join(root, "esc")); err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		for _, tc := range []struct {
			p, want string
			err     error
		}{
			{"/d/l", "b", nil},
			{"/d/up", "../../../etc/passwd", nil},
			{"/esc/d/l", "b", nil}, // "/" is the root: esc/d is /d
			{"/f", "", unix.EINVAL},
			{"/nope", "", unix.ENOENT},
		} {
			got, err := s.Readlink(ctx, tc.p)
			if got != tc.want || !errors.Is(err, tc.err) && !(err == nil && tc.err == nil) {
				t.Errorf("%s: got %q, %v; want %q, %v", tc.p, got, err, tc.want, tc.err)
			}
		}
	})
}
