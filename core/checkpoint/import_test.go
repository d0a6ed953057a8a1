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

// A checkpoint imported into a store that has its own, with a higher seq
// (another journal's), is not the base of the next checkpoint: the one
// made here is, whose entries know the files' stat identities. Into an
// empty store (an adoption), it is; and a restore to it brings its tree.
func TestImportedIsNoBaseOverOwn(t *testing.T) {
	from := t.TempDir()
	mk(t, from, map[string]string{"a.txt": "new-a", "b.txt": "same", "d.txt": "added"})
	src, err := core.Open("src", from, core.Options{StateDir: t.TempDir()})
	must(t, err)
	defer src.Close()
	cp, err := Create(ctx, src, Options{})
	must(t, err)
	ents, err := Entries(src, cp.ID)
	must(t, err)
	put := func(dst *core.Sandbox) {
		for _, e := range ents {
			if e.Type == "file" {
				f, err := OpenObject(src, e.Hash)
				must(t, err)
				_, err = PutObject(dst, e.Hash, f, e.Size)
				f.Close()
				must(t, err)
			}
		}
	}
	base := func(dst *core.Sandbox) string {
		h, err := storeOf(dst)
		must(t, err)
		h.mu.Lock()
		defer h.mu.Unlock()
		tr, err := h.newest(false)
		must(t, err)
		return tr.hdr.ID
	}

	root := t.TempDir()
	mk(t, root, map[string]string{"a.txt": "old-a", "b.txt": "same", "c.txt": "gone"})
	dst, err := core.Open("dst", root, core.Options{StateDir: t.TempDir()})
	must(t, err)
	defer dst.Close()
	own, err := Create(ctx, dst, Options{})
	must(t, err)
	put(dst)
	far := cp
	far.Seq = own.Seq + 1000
	_, err = Import(dst, far, ents)
	must(t, err)
	if got := base(dst); got != own.ID {
		t.Fatalf("the next checkpoint's base after an import over the store's own: %s, want its own %s (not %s)", got, own.ID, far.ID)
	}
	var st unix.Stat_t
	must(t, unix.Stat(filepath.Join(root, "b.txt"), &st))
	res, err := Restore(ctx, dst, RestoreOptions{Checkpoint: far.ID})
	must(t, err)
	if len(res.Skipped) != 0 || len(res.Removed) != 1 || res.Removed[0] != "/c.txt" {
		t.Fatalf("restore to the imported checkpoint: %+v; want /c.txt removed, nothing skipped", res)
	}
	for p, want := range map[string]string{"a.txt": "new-a", "b.txt": "same", "d.txt": "added"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Fatalf("%s after the restore: %q, %v; want %q", p, b, err, want)
		}
	}
	var after unix.Stat_t
	must(t, unix.Stat(filepath.Join(root, "b.txt"), &after))
	if after.Ino != st.Ino {
		t.Fatalf("b.txt, the same in both trees, was rewritten (inode %d, then %d)", st.Ino, after.Ino)
	}

	fresh, err := core.Open("fresh", t.TempDir(), core.Options{StateDir: t.TempDir()})
	must(t, err)
	defer fresh.Close()
	put(fresh)
	_, err = Import(fresh, cp, ents)
	must(t, err)
	if got := base(fresh); got != cp.ID {
		t.Fatalf("the next checkpoint's base in a store holding only an imported one: %s, want %s", got, cp.ID)
	}
}
