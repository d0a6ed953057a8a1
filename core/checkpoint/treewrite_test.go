package checkpoint

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint/cas"
)

// TestTreeWriterThenFill: a checkpoint's tree written from its objects as
// they come (TreeWriter) is the tree the checkpoint saw (content, modes,
// times, symlinks, empty files and directories, one content in two
// files); the store does not hold the checkpoint until Fill, and a lookup
// of it meanwhile, marked Storing, answers ErrStoring. Fill stores each object from the
// tree's file still as written, fetches the one whose only file changed
// since, keeps its objects through a sweep meanwhile (a delete's), and
// records the checkpoint with the files' identities: the next
// checkpoint reads only the changed file, and a restore to the filled
// one brings the changed file's content back.
func TestTreeWriterThenFill(t *testing.T) {
	old := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	big := strings.Repeat("0123456789abcdef", 80<<10) + "tail" // past one read's buffer
	src, cp, ents := sourceCheckpoint(t, map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "d/same.txt": "alpha",
		"zero": "", "empty/": "", "big": big}, func(from string) {
		must(t, os.Chmod(filepath.Join(from, "d/b.txt"), 0o640))
		must(t, os.Chtimes(filepath.Join(from, "d"), old, old))
	})
	want := treeDigest(t, src.HostRoot())

	dst, root, rfd := emptyRoot(t)
	tw, err := NewTreeWriter(ctx, dst, ents, rfd)
	must(t, err)
	defer tw.Close()
	hashes := map[string]int64{}
	for _, e := range ents {
		if e.Type == "file" {
			hashes[e.Hash] = e.Size
		}
	}
	var wg sync.WaitGroup
	for h, size := range hashes { // at once, as a fetch's workers put them
		wg.Go(func() {
			f, err := OpenObject(src, h)
			if err != nil {
				t.Error(err)
				return
			}
			defer f.Close()
			if n, err := tw.Put(h, f, size); err != nil || n != size {
				t.Errorf("Put %s: %d bytes, %v; want %d", h, n, err, size)
			}
		})
	}
	wg.Wait()
	f, err := OpenObject(src, ents[1].Hash)
	must(t, err)
	if _, err := tw.Put(ents[1].Hash, f, ents[1].Size); err == nil {
		t.Error("an object put twice: taken")
	}
	f.Close()
	ids, err := tw.Finish(ctx)
	must(t, err)
	sameTree(t, "the tree written", want, treeDigest(t, root))
	if _, err := ByID(dst, cp.ID); !errors.Is(err, ErrUnknown) {
		t.Fatalf("the checkpoint before Fill: %v, want ErrUnknown", err)
	}

	must(t, os.WriteFile(filepath.Join(root, "d/b.txt"), []byte("changed"), 0o640))
	stored, err := Storing(dst, cp.ID)
	must(t, err)
	var fetched []string
	st, err := func() (FillStats, error) {
		_, st, err := Fill(ctx, dst, cp, ents, ids, func(_ context.Context, hash string) error {
			if _, err := ByID(dst, cp.ID); !errors.Is(err, ErrStoring) {
				t.Errorf("the checkpoint during Fill: %v, want ErrStoring", err)
			}
			fetched = append(fetched, hash)
			// A sweep meanwhile (a delete's) keeps what Fill stored so far.
			other, err := Create(ctx, dst, Options{})
			if err != nil {
				return err
			}
			if err := Delete(dst, other.ID); err != nil {
				return err
			}
			f, err := OpenObject(src, hash)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = PutObject(dst, hash, f, hashes[hash])
			return err
		})
		return st, err
	}()
	must(t, err)
	if _, err := ByID(dst, cp.ID); err != nil {
		t.Fatalf("the checkpoint after Fill, still marked: %v; want it found", err)
	}
	stored()
	bHash := entryOf(t, ents, "/d/b.txt").Hash
	if st.FromTree != len(hashes)-1 || st.Fetched != 1 || len(fetched) != 1 || fetched[0] != bHash {
		t.Fatalf("Fill %+v, fetched %v; want %d from the tree and %s fetched", st, fetched, len(hashes)-1, bHash)
	}
	if got, err := ByID(dst, cp.ID); err != nil || got.Files != cp.Files || got.Bytes != cp.Bytes {
		t.Fatalf("the checkpoint after Fill: %+v, %v; want %+v", got, err, cp)
	}
	before := FilesRead(dst)
	_, err = Create(ctx, dst, Options{})
	must(t, err)
	if n := FilesRead(dst) - before; n != 1 {
		t.Errorf("the checkpoint after Fill read %d files; want 1 (d/b.txt, changed)", n)
	}
	_, err = Restore(ctx, dst, RestoreOptions{Checkpoint: cp.ID})
	must(t, err)
	if b, err := os.ReadFile(filepath.Join(root, "d/b.txt")); err != nil || string(b) != "beta" {
		t.Fatalf("d/b.txt restored to the filled checkpoint: %q, %v; want beta", b, err)
	}
}

// TestTreeWriterRefusals: an object whose bytes do not hash to its name,
// or are more or fewer than its size, is cas.ErrMismatch; an object the
// tree does not name is refused; a tree whose object never came fails
// Finish; entries CheckEntries refuses are refused before anything is
// made.
func TestTreeWriterRefusals(t *testing.T) {
	_, _, ents := sourceCheckpoint(t, map[string]string{"a.txt": "alpha", "d/b.txt": "beta"})
	a := entryOf(t, ents, "/a.txt")
	for _, c := range []struct {
		name string
		hash string
		data string
		size int64
		want error
	}{
		{"other bytes", a.Hash, "alphA", a.Size, cas.ErrMismatch},
		{"fewer bytes", a.Hash, "alph", a.Size, cas.ErrMismatch},
		{"more bytes", a.Hash, "alpha!", a.Size, cas.ErrMismatch},
		{"not named", strings.Repeat("0", 64), "alpha", 5, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			dst, _, rfd := emptyRoot(t)
			tw, err := NewTreeWriter(ctx, dst, ents, rfd)
			must(t, err)
			defer tw.Close()
			_, err = tw.Put(c.hash, bytes.NewReader([]byte(c.data)), c.size)
			if err == nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("Put: %v, want %v", err, c.want)
			}
			if _, err := tw.Finish(ctx); !errors.Is(err, unix.ENOENT) {
				t.Fatalf("Finish with an object not come: %v, want ENOENT", err)
			}
		})
	}
	dst, root, rfd := emptyRoot(t)
	bad := append([]Entry{}, ents...)
	bad = append(bad, Entry{Path: "/../escape", Type: "dir", Mode: os.ModeDir | 0o755})
	if _, err := NewTreeWriter(ctx, dst, bad, rfd); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("a tree with /../escape: %v, want EINVAL", err)
	}
	if names, _ := os.ReadDir(root); len(names) != 0 {
		t.Fatalf("a refused tree made %d entries", len(names))
	}
}

// emptyRoot is a sandbox on an empty root, not served, the root's path,
// and a descriptor of it, closed (the sandbox too) when t ends.
func emptyRoot(t *testing.T) (*core.Sandbox, string, int) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "root")
	must(t, os.Mkdir(root, 0o700))
	s, err := core.Open("dst", root, core.Options{StateDir: t.TempDir()})
	must(t, err)
	t.Cleanup(func() { s.Close() })
	rfd, err := unix.Open(root, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	must(t, err)
	t.Cleanup(func() { unix.Close(rfd) })
	return s, root, rfd
}

func entryOf(t *testing.T, ents []Entry, p string) Entry {
	t.Helper()
	for _, e := range ents {
		if e.Path == p {
			return e
		}
	}
	t.Fatalf("no entry %s", p)
	return Entry{}
}
