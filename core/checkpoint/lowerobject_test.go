package checkpoint

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestMaterializeObjects: the first tree made of a checkpoint takes a
// file as its object itself where the object has the file's attributes,
// the first path of a content only; no two paths of the tree share an
// inode; the tree reads as the checkpoint; a copy of the checkpoint (a
// writable root) never shares an object's inode.
func TestMaterializeObjects(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "checkpoint materialization NOT TESTED: it needs root (trusted.* xattrs, an overlay mount)")
	}
	root := t.TempDir()
	mk(t, root, map[string]string{"solo.txt": "solo", "one.txt": "alpha", "other-mode": "alpha", "dup1": "same", "dup2": "same",
		"sub/nobody": "n", "empty": "", "ln": "->one.txt", "emptydir/": ""})
	must(t, os.Chmod(filepath.Join(root, "other-mode"), 0o600))
	must(t, os.Lchown(filepath.Join(root, "sub/nobody"), 65534, 65533))
	at := time.Date(1985, 10, 26, 8, 15, 0, 0, time.UTC) // what npm gives every file it unpacks
	for _, p := range []string{"dup1", "dup2"} {
		must(t, os.Chtimes(filepath.Join(root, p), at, at))
	}
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	want := treeDigest(t, root)
	l, err := Materialize(ctx, s, cp.ID)
	must(t, err)

	ino := func(p string) uint64 {
		t.Helper()
		var st unix.Stat_t
		must(t, unix.Lstat(p, &st))
		return st.Ino
	}
	object := func(content string) string {
		sum := sha256.Sum256([]byte(content))
		h := hex.EncodeToString(sum[:])
		return filepath.Join(l.Data, h[:2], h[2:])
	}
	for _, c := range []struct {
		path, content string
		linked        bool
	}{
		{"solo.txt", "solo", true},
		{"dup1", "same", true},
		{"dup2", "same", false}, // its content's object is dup1's
		{"sub/nobody", "n", true},
	} {
		if got := ino(filepath.Join(l.Path, c.path)) == ino(object(c.content)); got != c.linked {
			t.Errorf("%s: is its object: %v, want %v", c.path, got, c.linked)
		}
	}
	// The object of one content and two modes has the mode of the file the
	// checkpoint read first (it reads in parallel): one.txt claims it
	// (path order) and is it when the modes agree; other-mode never is.
	if ino(filepath.Join(l.Path, "other-mode")) == ino(object("alpha")) {
		t.Errorf("other-mode is the object one.txt claimed")
	}
	seen := map[uint64]string{}
	must(t, filepath.WalkDir(l.Path, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if other, ok := seen[ino(p)]; ok {
			t.Errorf("%s and %s are one inode in the made tree", other, p)
		}
		seen[ino(p)] = p
		return nil
	}))
	sameTree(t, "a tree of objects through an overlay", want, treeDigest(t, readOnlyOverlay(t, l)))

	dst := t.TempDir()
	dfd, err := unix.Open(dst, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(dfd)
	_, err = CopyTree(ctx, s, cp.ID, dfd)
	must(t, err)
	if ino(filepath.Join(dst, "one.txt")) == ino(object("alpha")) {
		t.Errorf("a copied tree's file is the store's object")
	}
	sameTree(t, "the copied tree", want, treeDigest(t, dst))
}
