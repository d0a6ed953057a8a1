package checkpoint

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core"
)

// A checkpoint imported into another sandbox's store (its objects first)
// is that sandbox's own: listed with its id and seq, its entries the
// sender's, and a restore to it brings the sender's tree back. An object
// missing, or an id taken, is refused.
func TestImportIsRestorable(t *testing.T) {
	from := t.TempDir()
	mk(t, from, map[string]string{"a.txt": "alpha", "d/b.txt": "beta"})
	must(t, os.Symlink("d/b.txt", filepath.Join(from, "link")))
	src, err := core.Open("src", from, core.Options{StateDir: t.TempDir()})
	must(t, err)
	defer src.Close()
	cp, err := Create(ctx, src, Options{})
	must(t, err)
	ents, err := Entries(src, cp.ID)
	must(t, err)

	root := t.TempDir()
	dst, err := core.Open("dst", root, core.Options{StateDir: t.TempDir()})
	must(t, err)
	defer dst.Close()
	if _, err := Import(dst, cp, ents); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("import before its objects: %v, want ENOENT", err)
	}
	for _, e := range ents {
		if e.Type != "file" {
			continue
		}
		f, err := OpenObject(src, e.Hash)
		must(t, err)
		_, err = PutObject(dst, e.Hash, f, e.Size)
		f.Close()
		must(t, err)
	}
	got, err := Import(dst, cp, ents)
	must(t, err)
	if got.ID != cp.ID || got.Seq != cp.Seq || got.Files != cp.Files || got.Dirs != cp.Dirs || got.Symlinks != cp.Symlinks || got.Bytes != cp.Bytes {
		t.Fatalf("imported %+v, want the header of %+v", got, cp)
	}
	if _, err := Import(dst, cp, ents); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second import: %v, want fs.ErrExist", err)
	}
	if _, err := Restore(ctx, dst, RestoreOptions{Checkpoint: cp.ID}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"a.txt": "alpha", "d/b.txt": "beta"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Fatalf("%s after a restore to the imported checkpoint: %q, %v; want %q", p, b, err, want)
		}
	}
	if target, err := os.Readlink(filepath.Join(root, "link")); err != nil || target != "d/b.txt" {
		t.Fatalf("link after the restore: %q, %v", target, err)
	}
}
