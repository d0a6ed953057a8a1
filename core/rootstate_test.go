package core

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRootState(t *testing.T) {
	for _, c := range []struct {
		name string
		do   func(root, base string) error
		want string
	}{
		{"in place", func(string, string) error { return nil }, "ok"},
		{"removed", func(root, _ string) error { return os.RemoveAll(root) }, "removed"},
		{"renamed away", func(root, base string) error { return os.Rename(root, filepath.Join(base, "away")) }, "moved"},
		{"replaced", func(root, base string) error {
			if err := os.Rename(root, filepath.Join(base, "away")); err != nil {
				return err
			}
			return os.Mkdir(root, 0o755)
		}, "moved"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "root")
			mk(t, root, map[string]string{"f": "x"})
			s, err := Open("default", root, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := c.do(root, base); err != nil {
				t.Fatal(err)
			}
			if got := s.RootState(); got != c.want {
				t.Errorf("RootState() = %q, want %q", got, c.want)
			}
		})
	}
}
