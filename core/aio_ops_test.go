package core

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// Tests of the operations the AIO file plane added: Glob, Walk,
// WriteInPlace, Copy.

func TestGlob(t *testing.T) {
	cases := []struct {
		pat, rel string
		want     bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "x/a.go", false},
		{"**/*.go", "a.go", true},
		{"**/*.go", "x/y/a.go", true},
		{"x/**/*.go", "x/a.go", true},
		{"x/**/*.go", "x/y/z/a.go", true},
		{"x/**/*.go", "w/x/a.go", false},
		{"x/**", "x/y/z", true},
		{"x/**", "x", true},
		{"./src/*.py", "src/app.py", true},
		{"a/**/**/b", "a/b", true},
		{"[ab]?.txt", "b1.txt", true},
		{"*", "x/y", false},
	}
	for _, c := range cases {
		if got := MatchGlob(c.pat, c.rel); got != c.want {
			t.Errorf("MatchGlob(%q, %q): got %v, want %v", c.pat, c.rel, got, c.want)
		}
	}
	for _, bad := range []string{"", "[", "a/[/b"} {
		if _, err := CompileGlob(bad); !errors.Is(err, unix.EINVAL) {
			t.Errorf("CompileGlob(%q): got %v, want EINVAL", bad, err)
		}
	}
	for pat, want := range map[string]int{"*.go": 1, "a/b/*": 3, "**/x": 0} {
		g, _ := CompileGlob(pat)
		if got := g.MaxDepth(); got != want {
			t.Errorf("MaxDepth(%q): got %d, want %d", pat, got, want)
		}
	}
}

func TestWalk(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{
			"d/a":         "1",
			"d/.h/x":      "",
			"d/s/b":       "22",
			"d/s/t/c":     "",
			"d/ln":        "->/other",
			"d/dead":      "->/nowhere",
			"other/inner": "",
		})
		walk := func(o WalkOptions) string {
			var got []string
			err := s.Walk(ctx, "/d", o, func(e WalkEntry) error {
				tag := e.Rel
				if e.LinkDir {
					tag += "@dir"
				}
				if e.LinkDead {
					tag += "@dead"
				}
				got = append(got, tag)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			return strings.Join(got, ",")
		}
		for _, c := range []struct {
			o    WalkOptions
			want string
		}{
			{WalkOptions{}, ".h,.h/x,a,dead@dead,ln@dir,s,s/b,s/t,s/t/c"},
			{WalkOptions{NoHidden: true}, "a,dead@dead,ln@dir,s,s/b,s/t,s/t/c"},
			{WalkOptions{MaxDepth: 1}, ".h,a,dead@dead,ln@dir,s"},
			{WalkOptions{MaxDepth: 2, NoHidden: true}, "a,dead@dead,ln@dir,s,s/b,s/t"},
		} {
			if got := walk(c.o); got != c.want {
				t.Errorf("Walk(%+v): got %s, want %s", c.o, got, c.want)
			}
		}
		n := 0
		s.Walk(ctx, "/d", WalkOptions{}, func(e WalkEntry) error {
			n++
			if n == 2 {
				return fs.SkipAll
			}
			return nil
		})
		if n != 2 {
			t.Errorf("SkipAll: visited %d, want 2", n)
		}
		if err := s.Walk(ctx, "/d/a", WalkOptions{}, func(WalkEntry) error { return nil }); !errors.Is(err, unix.ENOTDIR) {
			t.Errorf("Walk of a file: got %v, want ENOTDIR", err)
		}
	})
}

func TestWriteInPlace(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"f": "old old", "ln": "->f", "dir/": ""})
		os.Chmod(filepath.Join(root, "f"), 0o600)
		fi, _ := os.Stat(filepath.Join(root, "f"))
		ino := fi.Sys().(*syscall.Stat_t).Ino
		seq := s.Journal().Seq()
		if n, err := s.WriteInPlace(ctx, "/ln", strings.NewReader("new"), InPlaceOptions{}); err != nil || n != 3 {
			t.Fatalf("write through the link: %d %v", n, err)
		}
		if n, err := s.WriteInPlace(ctx, "/f", strings.NewReader("+"), InPlaceOptions{Append: true}); err != nil || n != 1 {
			t.Fatalf("append: %d %v", n, err)
		}
		b, _ := os.ReadFile(filepath.Join(root, "f"))
		fi, _ = os.Stat(filepath.Join(root, "f"))
		if string(b) != "new+" || fi.Sys().(*syscall.Stat_t).Ino != ino || fi.Mode().Perm() != 0o600 {
			t.Errorf("got %q inode kept %v mode %v", b, fi.Sys().(*syscall.Stat_t).Ino == ino, fi.Mode().Perm())
		}
		if _, err := s.WriteInPlace(ctx, "/n/e/w", strings.NewReader("x"), InPlaceOptions{MkdirParents: true}); err != nil {
			t.Fatal(err)
		}
		es, _ := s.Journal().Since(seq, 100)
		var got []string
		for _, e := range es {
			got = append(got, string(e.Type)+" "+e.Path+" "+string(e.Origin))
		}
		want := "write /f api,write /f api,create /n api,create /n/e api,create /n/e/w api,write /n/e/w api"
		if strings.Join(got, ",") != want {
			t.Errorf("events: got %s, want %s", strings.Join(got, ","), want)
		}
		if _, err := s.WriteInPlace(ctx, "/dir", strings.NewReader("x"), InPlaceOptions{}); !errors.Is(err, unix.EISDIR) {
			t.Errorf("over a directory: got %v, want EISDIR", err)
		}
		if _, err := s.WriteInPlace(ctx, "/missing/x", strings.NewReader("x"), InPlaceOptions{}); !errors.Is(err, unix.ENOENT) {
			t.Errorf("missing parent: got %v, want ENOENT", err)
		}
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), TempPrefix) {
				t.Errorf("temp file made: %s", e.Name())
			}
		}
	})
}

func TestCopy(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"src/x.sh": "#!", "src/d/y": "yy", "src/l": "->d/y", "dst": "keep", "esc": "->/../../etc"})
		os.Chmod(filepath.Join(root, "src/x.sh"), 0o755)
		os.Chmod(filepath.Join(root, "src/d"), 0o700)
		seq := s.Journal().Seq()
		st, err := s.Copy(ctx, "/src", "/cp", CopyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.Entries != 5 || st.Bytes != 4 {
			t.Errorf("stats: got %+v, want 5 entries 4 bytes", st)
		}
		fi, _ := os.Stat(filepath.Join(root, "cp/x.sh"))
		di, _ := os.Stat(filepath.Join(root, "cp/d"))
		if fi.Mode().Perm() != 0o755 || di.Mode().Perm() != 0o700 {
			t.Errorf("modes: %v %v", fi.Mode().Perm(), di.Mode().Perm())
		}
		if tgt, _ := os.Readlink(filepath.Join(root, "cp/l")); tgt != "d/y" {
			t.Errorf("symlink target: %q", tgt)
		}
		es, _ := s.Journal().Since(seq, 100)
		creates := 0
		for _, e := range es {
			if e.Type == journal.Create && strings.HasPrefix(e.Path, "/cp") {
				creates++
			}
			if strings.Contains(e.Path, TempPrefix) {
				t.Errorf("event on the temp name: %+v", e)
			}
		}
		if creates != 5 {
			t.Errorf("create events: got %d, want 5", creates)
		}
		if _, err := s.Copy(ctx, "/src/x.sh", "/dst", CopyOptions{}); !errors.Is(err, unix.EEXIST) {
			t.Errorf("onto an existing file: got %v, want EEXIST", err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "dst")); string(b) != "keep" {
			t.Errorf("destination changed: %q", b)
		}
		if _, err := s.Copy(ctx, "/src", "/dst", CopyOptions{Overwrite: true}); err != nil {
			t.Errorf("dir over a file with overwrite: %v", err)
		}
		if _, err := os.Stat(filepath.Join(root, "dst/d/y")); err != nil {
			t.Errorf("dst/d/y: %v", err)
		}
		if _, err := s.Copy(ctx, "/src", "/src/d/in", CopyOptions{}); !errors.Is(err, unix.EINVAL) {
			t.Errorf("into itself: got %v, want EINVAL", err)
		}
		// A symlink is copied as itself, never followed out of the root.
		if _, err := s.Copy(ctx, "/esc", "/esc2", CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		if tgt, _ := os.Readlink(filepath.Join(root, "esc2")); tgt != "/../../etc" {
			t.Errorf("escape link: %q", tgt)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := s.Copy(cctx, "/src", "/cancelled", CopyOptions{}); err == nil {
			t.Errorf("cancelled copy succeeded")
		}
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), TempPrefix) || e.Name() == "cancelled" {
				t.Errorf("left behind: %s", e.Name())
			}
		}
	})
}
