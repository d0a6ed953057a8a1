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
