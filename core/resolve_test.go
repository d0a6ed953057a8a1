package core

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"sandfs/internal/testenv"

	"golang.org/x/sys/unix"
)

func TestClean(t *testing.T) {
	s := &Sandbox{workdir: "/work"}
	for _, tc := range []struct {
		in, want string
		errno    unix.Errno
	}{
		{"/", "/", 0},
		{"a", "/work/a", 0},
		{".", "/work", 0},
		{"../../..", "/", 0},
		{"/../../etc/passwd", "/etc/passwd", 0},
		{"a/./b//c/", "/work/a/b/c", 0},
		{"", "", unix.EINVAL},
		{"a\x00b", "", unix.EINVAL},
	} {
		got, err := s.Clean(tc.in)
		if tc.errno != 0 {
			if e, _ := Errno(err); e != tc.errno {
				t.Errorf("Clean(%q) error %v, want %v", tc.in, err, tc.errno)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("Clean(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

var escapePaths = []string{
	"../" + "outside/secret",
	"/../../../../secret",
	"dir/../../../secret",
	"abs/secret", "abs/sub/x", "absfile",
	"rel/secret", "rel/sub/x",
	"dir/deeprel/secret",
	"loop1", "loop1/x", "self/x",
	"dir/up/up/up/absfile",
	"etc/passwd", "procself/etc/passwd",
	"dotdotchain/secret",
}

func TestEscapeReads(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		outside := testenv.EscapeFixture(t, root)
		for _, p := range append(escapePaths, "../"+filepath.Base(outside)+"/secret") {
			if f, _, err := s.OpenFile(ctx, p); err == nil {
				b, _ := io.ReadAll(f)
				f.Close()
				if string(b) == "SECRET" {
					t.Errorf("OpenFile(%q) read the file outside the root", p)
				}
			}
			if info, err := s.Stat(ctx, p); err == nil && info.Size == int64(len("SECRET")) && info.IsRegular() {
				t.Errorf("Stat(%q) = %+v: looks like the outside file", p, info)
			}
			if ents, _, err := s.List(ctx, p, 0); err == nil {
				for _, e := range ents {
					if e.Name == "secret" {
						t.Errorf("List(%q) shows the outside directory", p)
					}
				}
			}
		}
		// The loops fail with ELOOP rather than spinning.
		for _, p := range []string{"loop1", "self/x"} {
			if _, err := s.Stat(ctx, p); !errors.Is(err, unix.ELOOP) {
				t.Errorf("Stat(%q) = %v, want ELOOP", p, err)
			}
		}
		// An absolute symlink is read from the root: dir/up/.. stays at the root.
		if f, _, err := s.OpenFile(ctx, "dir/up/inside"); err != nil {
			t.Errorf("dir/up/inside: %v", err)
		} else {
			f.Close()
		}
	})
}

func TestEscapeWrites(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		outside := testenv.EscapeFixture(t, root)
		before := snapshot(t, outside)
		for _, p := range escapePaths {
			s.WriteFile(ctx, p, strings.NewReader("PWNED"), WriteOptions{MkdirParents: true})
			s.WriteFile(ctx, p+"2", strings.NewReader("PWNED"), WriteOptions{})
			s.Mkdir(ctx, p+"/newdir", true, 0)
			s.Move(ctx, "inside", p, MoveOptions{Overwrite: true, MkdirParents: true})
			s.Move(ctx, p, "moved", MoveOptions{})
			s.Remove(ctx, p, true)
			extractTar(ctx, s, p, testenv.TarOf(t, []testenv.TarEntry{{Name: "t", Body: "PWNED"}}))
			mk(t, root, map[string]string{"inside": "INSIDE"})
		}
		sameSnapshot(t, "outside", before, snapshot(t, outside))
	})
}

// TestEscapeRace swaps a directory for a symlink to outside, again and
// again, while reads and writes go through it; none may reach outside.
func TestEscapeRace(t *testing.T) {
	iterations := 1000
	if testing.Short() {
		iterations = 200
	}
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		outside := testenv.EscapeFixture(t, root)
		before := snapshot(t, outside)
		sw := filepath.Join(root, "sw")
		mk(t, root, map[string]string{"sw/secret": "INSIDE"})
		mk(t, root, map[string]string{"real/secret": "INSIDE"})

		var stop atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() { // the attacker: sw alternates between a directory and a symlink out
			defer wg.Done()
			targets := []string{outside, "../" + filepath.Base(outside)}
			tmp := filepath.Join(root, "swtmp")
			for i := 0; !stop.Load(); i++ {
				os.Symlink(targets[i%2], tmp)
				unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, sw, unix.RENAME_EXCHANGE)
				unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, sw, unix.RENAME_EXCHANGE)
				os.Remove(tmp) // the symlink (Remove never follows it)
			}
		}()
		var escapes, ok atomic.Int64
		for i := 0; i < iterations; i++ {
			if f, _, err := s.OpenFile(ctx, "sw/secret"); err == nil {
				b, _ := io.ReadAll(f)
				f.Close()
				if string(b) == "SECRET" {
					escapes.Add(1)
				}
				ok.Add(1)
			}
			s.WriteFile(ctx, "sw/w", strings.NewReader("PWNED"), WriteOptions{})
			s.Mkdir(ctx, "sw/d", false, 0)
			s.Remove(ctx, "sw/sub", true)
			s.Move(ctx, "real/secret", "sw/moved", MoveOptions{})
			s.Move(ctx, "sw/moved", "real/secret", MoveOptions{})
		}
		stop.Store(true)
		wg.Wait()
		if n := escapes.Load(); n != 0 {
			t.Fatalf("%d of %d reads escaped the root", n, iterations)
		}
		sameSnapshot(t, "outside", before, snapshot(t, outside))
		t.Logf("%d iterations, %d reads succeeded inside, 0 escapes", iterations, ok.Load())
	})
}

func TestErrorsCarryAPIPaths(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		_, err := s.Stat(ctx, "/no/such")
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Path != "/no/such" || !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("Stat error = %#v, want *fs.PathError on /no/such wrapping ENOENT", err)
		}
		if strings.Contains(err.Error(), root) {
			t.Errorf("error %q carries the host root", err)
		}
	})
}

// FuzzResolve holds every operation to the root for any client path: no
// panic, a canonical API path, nothing read or written outside.
func FuzzResolve(f *testing.F) {
	for _, p := range append(escapePaths, "", "/", ".", "..", "a/b/../../..", "x\x00y", "//", "dir/./up/../f", strings.Repeat("../", 300)+"secret", strings.Repeat("a/", 3000)) {
		f.Add(p)
	}
	root := f.TempDir()
	root = filepath.Join(root, "root")
	os.Mkdir(root, 0o755)
	s, err := Open("default", root, Options{})
	if err != nil {
		f.Fatal(err)
	}
	w, err := Open("default", root, Options{NoOpenat2: true})
	if err != nil {
		f.Fatal(err)
	}
	outside := testenv.EscapeFixture(f, root)
	f.Fuzz(func(t *testing.T, p string) {
		before := snapshot(t, outside)
		for _, sb := range []*Sandbox{s, w} {
			ap, err := sb.Clean(p)
			if err == nil && (!strings.HasPrefix(ap, "/") || filepath.Clean(ap) != ap) {
				t.Fatalf("Clean(%q) = %q: not canonical", p, ap)
			}
			if f, _, err := sb.OpenFile(ctx, p); err == nil {
				b, _ := io.ReadAll(io.LimitReader(f, 16))
				f.Close()
				if string(b) == "SECRET" {
					t.Fatalf("OpenFile(%q) read outside", p)
				}
			}
			sb.WriteFile(ctx, p, strings.NewReader("x"), WriteOptions{})
			sb.Mkdir(ctx, p, true, 0)
		}
		sameSnapshot(t, "outside", before, snapshot(t, outside))
	})
}
