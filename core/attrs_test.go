package core

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// eventsSince lists "type path" of the journal's events after seq.
func eventsSince(s *Sandbox, seq uint64) []string {
	evs, _ := s.Journal().Since(seq, 1000)
	var out []string
	for _, e := range evs {
		out = append(out, string(e.Type)+" "+e.Path)
	}
	return out
}

func TestChmodChown(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"d/a": "x", "d/s/b": "y", "d/ln": "->a", "top": "->d"})
		cases := []struct {
			name      string
			run       func() (AttrResult, error)
			wantPath  string
			wantCount int
			wantErr   error
			events    string
			check     func(t *testing.T)
		}{
			{"chmod one file", func() (AttrResult, error) { return s.Chmod(ctx, "/d/a", 0o600, false) },
				"/d/a", 1, nil, "chmod /d/a", func(t *testing.T) { wantMode(t, root, "d/a", 0o600) }},
			{"chmod recursive skips symlinks", func() (AttrResult, error) { return s.Chmod(ctx, "/d", 0o750, true) },
				"/d", 4, nil, "chmod /d,chmod /d/a,chmod /d/s,chmod /d/s/b", func(t *testing.T) {
					for _, p := range []string{"d", "d/a", "d/s", "d/s/b"} {
						wantMode(t, root, p, 0o750)
					}
				}},
			{"chmod follows a final symlink", func() (AttrResult, error) { return s.Chmod(ctx, "/top", 0o755, false) },
				"/d", 1, nil, "chmod /d", func(t *testing.T) { wantMode(t, root, "d", 0o755) }},
			{"chmod missing", func() (AttrResult, error) { return s.Chmod(ctx, "/nope", 0o755, true) },
				"", 0, fs.ErrNotExist, "", nil},
			{"chown recursive to self", func() (AttrResult, error) { return s.Chown(ctx, "/d", os.Getuid(), os.Getgid(), true) },
				"/d", 5, nil, "chmod /d,chmod /d/a,chmod /d/ln,chmod /d/s,chmod /d/s/b", nil},
			{"chown neither", func() (AttrResult, error) { return s.Chown(ctx, "/d", -1, -1, false) },
				"", 0, unix.EINVAL, "", nil},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				seq := s.Journal().Seq()
				res, err := c.run()
				if c.wantErr != nil {
					if !errors.Is(err, c.wantErr) {
						t.Fatalf("err: got %v, want %v", err, c.wantErr)
					}
					var pe *fs.PathError
					if !errors.As(err, &pe) || strings.HasPrefix(pe.Path, root) {
						t.Errorf("err %v: want a PathError with an API path", err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if res.Path != c.wantPath || res.Count != c.wantCount || len(res.Paths) != c.wantCount {
					t.Errorf("got %+v, want path %s count %d", res, c.wantPath, c.wantCount)
				}
				if got := strings.Join(eventsSince(s, seq), ","); got != c.events {
					t.Errorf("events: got %s, want %s", got, c.events)
				}
				if c.check != nil {
					c.check(t)
				}
			})
		}
	})
}

func wantMode(t *testing.T, root, p string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(filepath.Join(root, p))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != want {
		t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), want)
	}
}

func TestPreserveAttrs(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		mk(t, root, map[string]string{"src/a": "abc", "src/sub/b": "de", "src/ln": "->a"})
		old := time.Date(2021, 5, 6, 7, 8, 9, 0, time.UTC)
		os.Chmod(filepath.Join(root, "src/a"), 0o604)
		os.Chmod(filepath.Join(root, "src/sub"), 0o711)
		xattrs := unix.Setxattr(filepath.Join(root, "src/a"), "user.k", []byte("v"), 0) == nil
		for _, p := range []string{"src/a", "src/sub/b", "src/sub", "src"} {
			os.Chtimes(filepath.Join(root, p), old, old)
		}
		if _, err := s.Copy(ctx, "/src", "/dst", CopyOptions{}); err != nil {
			t.Fatal(err)
		}
		seq := s.Journal().Seq()
		if err := s.PreserveAttrs(ctx, "/src", "/dst"); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"dst", "dst/a", "dst/sub", "dst/sub/b"} {
			st, err := os.Lstat(filepath.Join(root, p))
			if err != nil {
				t.Fatal(err)
			}
			if !st.ModTime().Equal(old) {
				t.Errorf("%s: mtime %v, want %v", p, st.ModTime(), old)
			}
		}
		wantMode(t, root, "dst/a", 0o604)
		wantMode(t, root, "dst/sub", 0o711)
		if xattrs {
			buf := make([]byte, 8)
			n, err := unix.Getxattr(filepath.Join(root, "dst/a"), "user.k", buf)
			if err != nil || string(buf[:n]) != "v" {
				t.Errorf("xattr: %q, %v", buf[:max(n, 0)], err)
			}
		}
		evs := eventsSince(s, seq)
		if len(evs) != 5 {
			t.Errorf("events: got %v, want one chmod per entry (5)", evs)
		}
		for _, e := range evs {
			if !strings.HasPrefix(e, string(journal.Chmod)+" /dst") {
				t.Errorf("event %s", e)
			}
		}
		if err := s.PreserveAttrs(ctx, "/nope", "/dst"); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("missing source: got %v", err)
		}
	})
}
