package core

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

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
