package core

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

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
