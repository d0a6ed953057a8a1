package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"sandfs/core"
)

// digestOf is treeDigest's description of a checkpoint's entries.
func digestOf(t *testing.T, s *core.Sandbox, id string) map[string]string {
	t.Helper()
	ents, err := Entries(s, id)
	must(t, err)
	out := map[string]string{}
	for _, e := range ents {
		rel, _ := filepath.Rel("/", e.Path)
		own := fmt.Sprintf("%d:%d", e.Uid, e.Gid)
		switch e.Type {
		case "symlink":
			out[rel] = "link " + own + " " + e.Target
		case "dir":
			out[rel] = fmt.Sprintf("dir %v %s %d", e.Mode, own, e.Mtime.UnixNano())
		default:
			out[rel] = fmt.Sprintf("file %v %s %d %s", e.Mode, own, e.Mtime.UnixNano(), e.Hash)
		}
	}
	return out
}

// A whole walk takes the root's directories side by side (scan_fan.go)
// and finds what one walk would: every entry beneath them and beside
// them, nothing of what is left out (the daemon's temps, a FIFO, the
// default excludes when asked); a walk after changes in several of them
// reads exactly the files changed.
func TestWholeWalkSideBySide(t *testing.T) {
	root := t.TempDir()
	tree := map[string]string{"top.txt": "top", "node_modules/pkg/x.js": "x"}
	for d := 0; d < 8; d++ {
		for f := 0; f < 20; f++ {
			tree[fmt.Sprintf("d%d/sub%d/f%d", d, f%3, f)] = fmt.Sprintf("file %d of %d", f, d)
		}
		tree[fmt.Sprintf("d%d/node_modules/y.js", d)] = "y"
	}
	mk(t, root, tree)
	must(t, os.Symlink("d1/sub0/f0", filepath.Join(root, "link")))
	must(t, os.Symlink("../top.txt", filepath.Join(root, "d2", "link")))
	must(t, os.Mkdir(filepath.Join(root, "empty"), 0o700))
	must(t, syscall.Mkfifo(filepath.Join(root, "fifo"), 0o600))
	must(t, syscall.Mkfifo(filepath.Join(root, "d3", "fifo"), 0o600))
	s := histSandbox(t, root)
	<-s.SweepDone() // the open's sweep of temps is done: the one below stays
	temp := core.TempPrefix + "0123456789abcdef.part"
	must(t, os.WriteFile(filepath.Join(root, temp), []byte("temp"), 0o600))

	want := treeDigest(t, root)
	delete(want, temp)
	cp := mustCheckpoint(t, s, Options{})
	sameTree(t, "a whole walk", want, digestOf(t, s, cp.ID))
	for p := range want {
		if strings.Contains(p, "node_modules") {
			delete(want, p)
		}
	}
	skip := mustCheckpoint(t, s, Options{SkipExcluded: true})
	sameTree(t, "a whole walk without the default excludes", want, digestOf(t, s, skip.ID))

	reads := FilesRead(s)
	for _, p := range []string{"d0/sub0/f0", "d5/sub2/f8", "d7/sub1/f1", "top.txt"} {
		must(t, os.WriteFile(filepath.Join(root, p), []byte("changed "+p), 0o644))
	}
	must(t, os.RemoveAll(filepath.Join(root, "d4")))
	again := mustCheckpoint(t, s, Options{})
	if r := FilesRead(s) - reads; r != 4 {
		t.Fatalf("the walk after 4 files changed read %d files", r)
	}
	want = treeDigest(t, root)
	delete(want, temp)
	sameTree(t, "a whole walk after changes", want, digestOf(t, s, again.ID))
}
