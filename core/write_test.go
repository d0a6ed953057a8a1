package core

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// TestWriteFileThroughLinks: a write follows final symlinks as the root's
// resolution would, parents made for where the last one points when
// asked; a loop is ELOOP and changes nothing.
func TestWriteFileThroughLinks(t *testing.T) {
	for _, c := range []struct {
		name, path string
		mkdir      bool
		want       string // the file that holds the body, "" for none
		err        error
	}{
		{"a chain of two links", "two", false, "old", nil},
		{"a dangling link, parents made", "dangling", true, "to/be/made", nil},
		{"a dangling link, no parents made", "dangling", false, "", unix.ENOENT},
		{"an absolute link, taken from the root", "abs", true, "etc/passwd", nil},
		{"a link to itself", "self", false, "", unix.ELOOP},
		{"a loop of two", "loopa", true, "", unix.ELOOP},
		{"a link in a directory made for it", "new/deeper/f", true, "new/deeper/f", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			mk(t, root, map[string]string{"old": "OLD", "one": "->old", "two": "->one", "dangling": "->to/be/made",
				"abs": "->/etc/passwd", "self": "->self", "loopa": "->loopb", "loopb": "->loopa"})
			s, err := Open("t", root, Options{})
			must(t, err)
			defer s.Close()
			before := treeOf(t, root)
			_, err = s.WriteFile(ctx, c.path, strings.NewReader("BODY"), WriteOptions{MkdirParents: c.mkdir})
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err %v, want %v", err, c.err)
				}
				if after := treeOf(t, root); after != before {
					t.Errorf("a failed write changed the tree:\n%s\nwas\n%s", after, before)
				}
				return
			}
			must(t, err)
			if b, err := os.ReadFile(filepath.Join(root, c.want)); err != nil || string(b) != "BODY" {
				t.Errorf("%s holds %q, %v", c.want, b, err)
			}
			if st, err := os.Lstat(filepath.Join(root, c.path)); err != nil || (c.path != c.want && st.Mode()&fs.ModeSymlink == 0) {
				t.Errorf("%s is no longer a link: %v", c.path, err)
			}
		})
	}
}

// treeOf lists every name under root with its kind and, for a symlink,
// its target, for comparing a tree before and after.
func treeOf(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	must(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		b.WriteString(p[len(root):] + " " + d.Type().String())
		if d.Type()&fs.ModeSymlink != 0 {
			l, _ := os.Readlink(p)
			b.WriteString(" -> " + l)
		}
		b.WriteString("\n")
		return nil
	}))
	return b.String()
}
