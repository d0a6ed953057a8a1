package core

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"sandfs/core/history"
)

// The manifest's walk, the root's directories side by side, holds what
// one walk of the whole tree holds: every entry, at every depth, with its
// inode, size, mtime and mode; no daemon temp nor anything beneath one;
// nothing through a symlink.
func TestWalkManifestWholeTree(t *testing.T) {
	root := t.TempDir()
	mk := func(p, body string) {
		t.Helper()
		full := filepath.Join(root, p)
		dir := filepath.Dir(full)
		if strings.HasSuffix(p, "/") {
			dir = full
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if dir == full {
			return
		}
		if err := os.WriteFile(full, []byte(body), 0o640); err != nil {
			t.Fatal(err)
		}
	}
	mk("top.txt", "top")
	mk("a/x.txt", "x")
	mk("a/b/c/deep.txt", "deep")
	mk("empty/", "")
	for d := range 20 {
		for f := range 5 {
			mk(fmt.Sprintf("d%02d/s/f%d", d, f), fmt.Sprintf("%d/%d", d, f))
		}
	}
	if err := os.Symlink("a", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	s, err := Open("default", root, Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	<-s.SweepDone() // the temps made next are the daemon's own, in use
	mk("a/.sandfs-0123456789abcdef.part", "a temp file")
	mk("a/b/.sandfs-00000000000000aa.part/inner", "beneath a temp directory")
	mk(".sandfs-fedcba9876543210.part/inner", "beneath a temp at the top")

	_, got, err := s.walkManifest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]history.Entry{}
	if err := s.Walk(context.Background(), "/", WalkOptions{}, manifestInto(want)); err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("the manifest's walk holds %d entries, one walk %d:\n%v\nwant\n%v", len(got), len(want), got, want)
	}
	// 1 top file, /a with 2 files and b/c, /empty, /link, 20 dirs of s/ and 5 files.
	if n := 1 + (1 + 1 + 1 + 1 + 1) + 1 + 1 + 20*(2+5); len(got) != n {
		t.Fatalf("%d entries, want %d: %v", len(got), n, slices.Sorted(maps.Keys(got)))
	}
	for p := range got {
		if strings.Contains(p, ".sandfs-") || strings.HasPrefix(p, "/link/") {
			t.Fatalf("%s kept: a temp, or a path through a symlink", p)
		}
	}
	deep, ok := got["/a/b/c/deep.txt"]
	if !ok || deep.Size != 4 || deep.Mode.Perm() != 0o640 || deep.Inode == 0 || deep.IsDir {
		t.Fatalf("/a/b/c/deep.txt: %+v, %v; want a file of 4 bytes, 0640", deep, ok)
	}
}
