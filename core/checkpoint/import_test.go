package checkpoint

import (
	"context"
	"errors"
	"fmt"
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
	src, cp, ents := sourceCheckpoint(t, map[string]string{"a.txt": "alpha", "d/b.txt": "beta"})

	root := t.TempDir()
	dst, err := core.Open("dst", root, core.Options{StateDir: t.TempDir()})
	must(t, err)
	defer dst.Close()
	if _, err := Import(dst, cp, ents); !errors.Is(err, unix.ENOENT) {
		t.Fatalf("import before its objects: %v, want ENOENT", err)
	}
	putObjects(t, src, dst, ents)
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
	putObjects(t, src, dst, ents)
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
	putObjects(t, src, fresh, ents)
	_, err = Import(fresh, cp, ents)
	must(t, err)
	if got := base(fresh); got != cp.ID {
		t.Fatalf("the next checkpoint's base in a store holding only an imported one: %s, want %s", got, cp.ID)
	}
}

// A tree from elsewhere written into a sandbox's empty root (TreeWriter)
// and stored from it (Fill) is known there: a checkpoint that walks the
// root after reads none of its files (CopyTree, which knows nothing of
// the root, leaves each one to be read), its entries are the imported
// ones, and a file changed since is read, alone. A second Fill of the
// checkpoint is fs.ErrExist.
func TestFilledTreeKnowsItsFiles(t *testing.T) {
	src, cp, ents := sourceCheckpoint(t, map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "d/e/c.txt": "gamma", "empty": ""})
	byPath := map[string]Entry{}
	for _, e := range ents {
		byPath[e.Path] = e
	}

	copied, _, cfd := emptyRoot(t)
	putObjects(t, src, copied, ents)
	_, err := Import(copied, cp, ents)
	must(t, err)
	_, err = CopyTree(ctx, copied, cp.ID, cfd)
	must(t, err)
	if _, err := Create(ctx, copied, Options{}); err != nil {
		t.Fatal(err)
	}
	if r := FilesRead(copied); r != int64(cp.Files) {
		t.Fatalf("a walk after CopyTree read %d files, want all %d (nothing knows them)", r, cp.Files)
	}

	dst, root, rfd := emptyRoot(t)
	tw, err := NewTreeWriter(ctx, dst, ents, rfd)
	must(t, err)
	_, contents := byContent(ents)
	for h, files := range contents {
		f, err := OpenObject(src, h)
		must(t, err)
		_, err = tw.Put(h, f, files[0].Size)
		f.Close()
		must(t, err)
	}
	ids, err := tw.Finish(ctx)
	must(t, err)
	noFetch := func(_ context.Context, hash string) error {
		return fmt.Errorf("object %s fetched: the tree holds it", hash)
	}
	_, _, err = Fill(ctx, dst, cp, ents, ids, noFetch)
	must(t, err)
	for p, want := range map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "d/e/c.txt": "gamma", "empty": ""} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Fatalf("%s written: %q, %v; want %q", p, b, err, want)
		}
	}
	next, err := Create(ctx, dst, Options{})
	must(t, err)
	if r := FilesRead(dst); r != 0 {
		t.Fatalf("a walk after Fill read %d files, want 0", r)
	}
	got, err := Entries(dst, next.ID)
	must(t, err)
	if len(got) != len(ents) {
		t.Fatalf("the walk's checkpoint has %d entries, want the imported %d", len(got), len(ents))
	}
	for _, e := range got {
		w := byPath[e.Path]
		if e.Type != w.Type || e.Hash != w.Hash || e.Size != w.Size || e.Target != w.Target || !e.Mtime.Equal(w.Mtime) {
			t.Fatalf("entry %s after the walk: %+v, want the imported %+v", e.Path, e, w)
		}
	}
	must(t, os.WriteFile(filepath.Join(root, "d/b.txt"), []byte("changed"), 0o644))
	after, err := Create(ctx, dst, Options{})
	must(t, err)
	if r := FilesRead(dst); r != 1 {
		t.Fatalf("a walk after one file changed read %d files, want 1", r)
	}
	ae, err := Entries(dst, after.ID)
	must(t, err)
	for _, e := range ae {
		if e.Path == "/d/b.txt" && e.Size != int64(len("changed")) {
			t.Fatalf("/d/b.txt in the next checkpoint: %+v", e)
		}
	}
	if _, _, err := Fill(ctx, dst, cp, ents, ids, noFetch); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second Fill of %s: %v, want fs.ErrExist", cp.ID, err)
	}
}

// sourceCheckpoint is a sandbox on a root holding tree and a symlink
// link -> d/b.txt (then changed by setup), its one checkpoint and that
// checkpoint's entries.
func sourceCheckpoint(t *testing.T, tree map[string]string, setup ...func(root string)) (*core.Sandbox, Checkpoint, []Entry) {
	t.Helper()
	from := t.TempDir()
	mk(t, from, tree)
	must(t, os.Symlink("d/b.txt", filepath.Join(from, "link")))
	for _, f := range setup {
		f(from)
	}
	src, err := core.Open("src", from, core.Options{StateDir: t.TempDir()})
	must(t, err)
	t.Cleanup(func() { src.Close() })
	cp, err := Create(ctx, src, Options{})
	must(t, err)
	ents, err := Entries(src, cp.ID)
	must(t, err)
	return src, cp, ents
}

// putObjects puts into dst's store the objects of ents' files, from src's.
func putObjects(t *testing.T, src, dst *core.Sandbox, ents []Entry) {
	t.Helper()
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
}
