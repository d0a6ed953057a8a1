package checkpoint

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
)

// deltaOf is what changed from the tree a to the tree b: the entries of b
// not in a as they are, and the paths of a not in b.
func deltaOf(a, b []Entry) (set []Entry, del []string) {
	old := map[string]string{}
	for _, e := range a {
		j, _ := json.Marshal(e)
		old[e.Path] = string(j)
	}
	now := map[string]bool{}
	for _, e := range b {
		now[e.Path] = true
		if j, _ := json.Marshal(e); old[e.Path] != string(j) {
			set = append(set, e)
		}
	}
	for _, e := range a {
		if !now[e.Path] {
			del = append(del, e.Path)
		}
	}
	return set, del
}

func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("%s:\n%s\nwant\n%s", what, gj, wj)
	}
}

// A checkpoint from elsewhere that changes one this store holds comes in
// as the changes (ImportDelta): its tree is the sender's, recorded as a
// delta of the base, read back the same after the store is opened again,
// and a restore to it brings the sender's tree.
func TestImportDelta(t *testing.T) {
	tree := map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "d/e/c.txt": "gamma", "keep.txt": "kept"}
	src, cp1, ents1 := sourceCheckpoint(t, tree)
	from := src.HostRoot()
	root, state := t.TempDir(), t.TempDir()
	dst, err := core.Open("dst", root, core.Options{StateDir: state})
	must(t, err)
	putObjects(t, src, dst, ents1)
	_, err = Import(dst, cp1, ents1)
	must(t, err)

	must(t, os.WriteFile(filepath.Join(from, "a.txt"), []byte("alpha, again"), 0o600))
	mk(t, from, map[string]string{"n/new.txt": "new"})
	must(t, os.RemoveAll(filepath.Join(from, "d", "e")))
	cp2, err := Create(ctx, src, Options{})
	must(t, err)
	ents2, err := Entries(src, cp2.ID)
	must(t, err)
	set, del := deltaOf(ents1, ents2)
	if len(set) == 0 || len(del) != 2 {
		t.Fatalf("the sender's changes: set %d, removed %v; want some, and d/e with its file", len(set), del)
	}
	putObjects(t, src, dst, set)
	got, err := ImportDelta(dst, cp2, cp1.ID, set, append(del, "/never-there"))
	must(t, err)
	if got.ID != cp2.ID || got.Seq != cp2.Seq || got.Files != cp2.Files || got.Dirs != cp2.Dirs || got.Bytes != cp2.Bytes {
		t.Fatalf("imported %+v, want the header of %+v", got, cp2)
	}
	z, err := Entries(dst, cp2.ID)
	must(t, err)
	sameJSON(t, "the imported tree", z, ents2)
	parent, dset, ddel, exact, err := Delta(dst, cp2.ID)
	must(t, err)
	if parent != cp1.ID || !exact || len(dset) != len(set) || strings.Join(ddel, " ") != strings.Join(del, " ") {
		t.Fatalf("recorded as parent %q, %d set, removed %v; want a delta of %s: %d set, removed %v", parent, len(dset), ddel, cp1.ID, len(set), del)
	}

	must(t, dst.Close())
	dst, err = core.Open("dst", root, core.Options{StateDir: state})
	must(t, err)
	defer dst.Close()
	z, err = Entries(dst, cp2.ID)
	must(t, err)
	sameJSON(t, "the imported tree read back", z, ents2)
	if _, err := Restore(ctx, dst, RestoreOptions{Checkpoint: cp2.ID}); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]string{"a.txt": "alpha, again", "n/new.txt": "new", "d/b.txt": "beta", "keep.txt": "kept"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Fatalf("%s after a restore: %q, %v; want %q", p, b, err, want)
		}
	}
	if _, err := os.Lstat(filepath.Join(root, "d", "e")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("d/e after a restore: %v, want it gone", err)
	}
}

// Changes that are malformed, would leave a path without its directory,
// name an object the store lacks, a base it lacks or an id it has, are
// refused, and nothing is recorded.
func TestImportDeltaRefuses(t *testing.T) {
	src, cp1, ents1 := sourceCheckpoint(t, map[string]string{"a.txt": "alpha", "d/b.txt": "beta"})
	dst, err := core.Open("dst", t.TempDir(), core.Options{StateDir: t.TempDir()})
	must(t, err)
	defer dst.Close()
	putObjects(t, src, dst, ents1)
	_, err = Import(dst, cp1, ents1)
	must(t, err)
	now := time.Unix(1700000000, 0)
	file := func(p, hash string) Entry {
		return Entry{Path: p, Type: "file", Mode: 0o644, Mtime: now, Size: 5, Hash: hash}
	}
	stored := ""
	for _, e := range ents1 {
		if e.Path == "/a.txt" {
			stored = e.Hash
		}
	}
	cp := cp1
	cp.ID = "cp_00000000abcd"
	cases := []struct {
		name string
		id   string
		base string
		set  []Entry
		del  []string
		want error
	}{
		{"a path whose directory is not in the tree", cp.ID, cp1.ID, []Entry{file("/x/y", stored)}, nil, fs.ErrInvalid},
		{"a directory removed, its file left", cp.ID, cp1.ID, nil, []string{"/d"}, fs.ErrInvalid},
		{"a file where a directory with a file was", cp.ID, cp1.ID, []Entry{file("/d", stored)}, nil, fs.ErrInvalid},
		{"the root removed", cp.ID, cp1.ID, nil, []string{"/"}, fs.ErrInvalid},
		{"a path not clean", cp.ID, cp1.ID, []Entry{file("/d/../a.txt", stored)}, nil, fs.ErrInvalid},
		{"a path named twice", cp.ID, cp1.ID, []Entry{file("/z", stored), file("/z", stored)}, nil, fs.ErrInvalid},
		{"an object the store lacks", cp.ID, cp1.ID, []Entry{file("/z", strings.Repeat("ab", 32))}, nil, unix.ENOENT},
		{"a base the store lacks", cp.ID, "cp_000000000001", []Entry{file("/z", stored)}, nil, ErrUnknown},
		{"an id the store has", cp1.ID, cp1.ID, []Entry{file("/z", stored)}, nil, fs.ErrExist},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := cp
			in.ID = c.id
			if _, err := ImportDelta(dst, in, c.base, c.set, c.del); !errors.Is(err, c.want) {
				t.Fatalf("ImportDelta: %v, want %v", err, c.want)
			}
			list, err := List(dst)
			must(t, err)
			if len(list) != 1 || list[0].ID != cp1.ID {
				t.Fatalf("after a refusal the store lists %+v, want %s alone", list, cp1.ID)
			}
		})
	}
}
