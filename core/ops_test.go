package core

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// failingReader yields some bytes, then fails, like a client that hangs up.
type failingReader struct{ n int }

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	n := min(len(p), r.n)
	for i := range p[:n] {
		p[i] = 'N'
	}
	r.n -= n
	return n, nil
}

func tempLeftovers(t *testing.T, dir string) []string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, TempPrefix+"*"))
	return m
}

func TestWriteFile(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"old": "OLD", "link": "->old", "d/": ""})
		os.Chmod(filepath.Join(root, "old"), 0o600)

		n, err := s.WriteFile(ctx, "/new/deep/f", strings.NewReader("hello"), WriteOptions{MkdirParents: true})
		if err != nil || n != 5 {
			t.Fatalf("WriteFile = %d, %v", n, err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "new/deep/f")); string(b) != "hello" {
			t.Errorf("content %q", b)
		}
		if st, _ := os.Stat(filepath.Join(root, "new/deep/f")); st.Mode() != 0o644 {
			t.Errorf("new file mode %v, want 0644", st.Mode())
		}
		if st, _ := os.Stat(filepath.Join(root, "new/deep")); st.Mode().Perm() != 0o755 {
			t.Errorf("new dir mode %v, want 0755", st.Mode())
		}
		if _, err := s.WriteFile(ctx, "/missing/f", strings.NewReader("x"), WriteOptions{}); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing parent without MkdirParents: %v, want ENOENT", err)
		}
		// Through a symlink: the target is replaced, the link stays, the mode is kept.
		if _, err := s.WriteFile(ctx, "link", strings.NewReader("NEW"), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "old")); string(b) != "NEW" {
			t.Errorf("old = %q after a write through link", b)
		}
		if st, _ := os.Lstat(filepath.Join(root, "link")); st.Mode()&fs.ModeSymlink == 0 {
			t.Error("link was replaced by a file")
		}
		if st, _ := os.Stat(filepath.Join(root, "old")); st.Mode() != 0o600 {
			t.Errorf("replaced file mode %v, want 0600 kept", st.Mode())
		}
		if _, err := s.WriteFile(ctx, "/d", strings.NewReader("x"), WriteOptions{}); !errors.Is(err, unix.EISDIR) {
			t.Errorf("write over a directory: %v, want EISDIR", err)
		}
		// A reader failing half-way leaves the old file whole and no temp file.
		if _, err := s.WriteFile(ctx, "old", &failingReader{n: 100 << 10}, WriteOptions{}); err == nil {
			t.Fatal("failed reader: no error")
		}
		if b, _ := os.ReadFile(filepath.Join(root, "old")); string(b) != "NEW" {
			t.Errorf("old = %q after a failed write", b)
		}
		if l := tempLeftovers(t, root); len(l) != 0 {
			t.Errorf("temp files left: %v", l)
		}
	})
}

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
