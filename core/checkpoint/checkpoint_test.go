package checkpoint

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
)

// histSandbox opens root as a sandbox that keeps state.
func histSandbox(t testing.TB, root string) *core.Sandbox {
	t.Helper()
	s, err := core.Open("default", root, core.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// treeDigest describes every entry under dir: type, mode, owner, mtime
// (not of symlinks), link target or content hash; the root too. A FIFO,
// socket or device, which no checkpoint records, is left out.
func treeDigest(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		st := info.Sys().(*syscall.Stat_t)
		own := fmt.Sprintf("%d:%d", st.Uid, st.Gid)
		switch {
		case d.Type()&(fs.ModeNamedPipe|fs.ModeSocket|fs.ModeDevice|fs.ModeCharDevice) != 0:
		case d.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "link " + own + " " + target
		case d.IsDir():
			out[rel] = fmt.Sprintf("dir %v %s %d", info.Mode(), own, info.ModTime().UnixNano())
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = fmt.Sprintf("file %v %s %d %x", info.Mode(), own, info.ModTime().UnixNano(), sha256.Sum256(b))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func digestDiff(a, b map[string]string) []string {
	var d []string
	for k, v := range a {
		if b[k] != v {
			d = append(d, fmt.Sprintf("%s: %q → %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			d = append(d, fmt.Sprintf("%s: appeared %q", k, v))
		}
	}
	sort.Strings(d)
	return d
}

func sameTree(t testing.TB, what string, want, got map[string]string) {
	t.Helper()
	if d := digestDiff(want, got); len(d) > 0 {
		t.Fatalf("%s: the tree differs:\n%s", what, strings.Join(d, "\n"))
	}
}

func mustCheckpoint(t testing.TB, s *core.Sandbox, o Options) Checkpoint {
	t.Helper()
	cp, err := Create(ctx, s, o)
	if err != nil {
		t.Fatal(err)
	}
	return cp
}

func write(t testing.TB, s *core.Sandbox, p, content string) {
	t.Helper()
	if _, err := s.WriteFile(ctx, p, strings.NewReader(content), core.WriteOptions{MkdirParents: true}); err != nil {
		t.Fatal(err)
	}
}

func TestCheckpointCreateListDelete(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "d/same.txt": "alpha", "empty/": "", "ln": "->a.txt",
		".git/HEAD": "ref", "node_modules/x/i.js": "js"})
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{Name: "first"})
	if !strings.HasPrefix(cp.ID, "cp_") || len(cp.ID) != 15 {
		t.Errorf("id %q", cp.ID)
	}
	// a.txt, d/b.txt, d/same.txt, .git/HEAD, node_modules/x/i.js
	want := Checkpoint{Files: 5, Dirs: 5, Symlinks: 1, Bytes: 5 + 4 + 5 + 3 + 2, NewBytes: 5 + 4 + 3 + 2}
	if cp.Files != want.Files || cp.Dirs != want.Dirs || cp.Symlinks != want.Symlinks || cp.Bytes != want.Bytes || cp.NewBytes != want.NewBytes {
		t.Errorf("counts %+v, want %+v", cp, want)
	}
	if cp.Name != "first" || cp.Reason != ReasonManual {
		t.Errorf("name %q reason %q", cp.Name, cp.Reason)
	}
	skip := mustCheckpoint(t, s, Options{SkipExcluded: true})
	if skip.Files != 3 || skip.Dirs != 2 || skip.NewBytes != 0 {
		t.Errorf("skip-excluded counts %+v", skip)
	}
	list, err := List(s)
	if err != nil || len(list) != 2 || list[0].ID != cp.ID || list[1].ID != skip.ID {
		t.Fatalf("list %+v %v", list, err)
	}
	e, err := Lookup(s, cp.ID, "/d/b.txt")
	if err != nil || e.Type != "file" || e.Size != 4 || e.Mode != 0o644 || e.Hash != fmt.Sprintf("%x", sha256.Sum256([]byte("beta"))) {
		t.Errorf("entry %+v %v", e, err)
	}
	if e, err := Lookup(s, cp.ID, "/ln"); err != nil || e.Type != "symlink" || e.Target != "a.txt" {
		t.Errorf("link entry %+v %v", e, err)
	}
	if _, err := Lookup(s, skip.ID, "/.git/HEAD"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("an excluded path in a skip-excluded checkpoint: %v", err)
	}
	rc, _, err := OpenFile(s, cp.ID, "/d/b.txt")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(rc)
	rc.Close()
	if string(b) != "beta" {
		t.Errorf("content %q", b)
	}
	if _, _, err := OpenFile(s, cp.ID, "/empty"); !errors.Is(err, unix.EISDIR) {
		t.Errorf("open a dir: %v", err)
	}

	// Deleting the first keeps the second whole and drops only the
	// objects no one names.
	if err := Delete(s, cp.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := ByID(s, cp.ID); !errors.Is(err, ErrUnknown) {
		t.Errorf("deleted checkpoint: %v", err)
	}
	if err := Delete(s, cp.ID); !errors.Is(err, ErrUnknown) {
		t.Errorf("delete twice: %v", err)
	}
	if rc, _, err := OpenFile(s, skip.ID, "/d/b.txt"); err != nil {
		t.Errorf("the other checkpoint lost its content: %v", err)
	} else {
		rc.Close()
	}
	if n := countObjects(t, s); n != 2 { // alpha, beta; .git's and node_modules' dropped
		t.Errorf("%d objects after the delete, want 2", n)
	}
	if err := Delete(s, skip.ID); err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, s); n != 0 {
		t.Errorf("%d objects with no checkpoint", n)
	}
}

func TestCheckpointUnknownAndNoState(t *testing.T) {
	s := histSandbox(t, t.TempDir())
	for _, id := range []string{"cp_000000000000", "nope", "../../etc/passwd", ""} {
		if _, err := ByID(s, id); !errors.Is(err, ErrUnknown) {
			t.Errorf("%q: %v", id, err)
		}
		if _, err := Restore(ctx, s, RestoreOptions{Checkpoint: id}); !errors.Is(err, ErrUnknown) {
			t.Errorf("restore %q: %v", id, err)
		}
		if err := Delete(s, id); !errors.Is(err, ErrUnknown) {
			t.Errorf("delete %q: %v", id, err)
		}
	}
	plain, err := core.Open("default", t.TempDir(), core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := Create(ctx, plain, Options{}); !errors.Is(err, ErrNoState) {
		t.Errorf("no state: %v", err)
	}
	if _, err := List(plain); !errors.Is(err, ErrNoState) {
		t.Errorf("no state: %v", err)
	}
	if _, err := ByID(plain, "cp_000000000000"); !errors.Is(err, ErrUnknown) || !errors.Is(err, ErrNoState) {
		t.Errorf("an id without state: %v", err)
	}
}

func TestCheckpointSchedule(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"a": "a"})
	s := histSandbox(t, root)
	for i := 0; i < 4; i++ {
		if i != 2 { // a tick with no change takes none
			write(t, s, "/a", fmt.Sprint("v", i))
		}
		if err := scheduledCheckpoint(ctx, s, 2); err != nil {
			t.Fatal(err)
		}
	}
	manual := mustCheckpoint(t, s, Options{Name: "kept"})
	write(t, s, "/a", "v9")
	if err := scheduledCheckpoint(ctx, s, 2); err != nil {
		t.Fatal(err)
	}
	list, _ := List(s)
	var reasons []string
	for _, cp := range list {
		reasons = append(reasons, cp.Reason)
	}
	if fmt.Sprint(reasons) != "[scheduled manual scheduled]" || list[1].ID != manual.ID {
		t.Errorf("kept %v", reasons)
	}
	// The kept ones restore whole after their parents were deleted.
	if _, err := Restore(ctx, s, RestoreOptions{Checkpoint: list[0].ID}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a")); string(b) != "v3" {
		t.Errorf("a = %q, want v3", b)
	}
	sctx, cancel := context.WithCancel(ctx)
	StartSchedule(sctx, s, 10*time.Millisecond, 5)
	write(t, s, "/a", "by the ticker")
	deadline := time.Now().Add(5 * time.Second)
	for {
		l, _ := List(s)
		if l[len(l)-1].Reason == ReasonScheduled && l[len(l)-1].Seq >= s.Journal().Seq() {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the schedule took no checkpoint")
		}
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
}

// TestCheckpointNeverTorn: a file rewritten in place while checkpoints
// read it is recorded whole (one version's bytes) or the checkpoint fails
// with EAGAIN; never a mix.
func TestCheckpointNeverTorn(t *testing.T) {
	root := t.TempDir()
	const size = 4 << 20
	p := filepath.Join(root, "hot")
	os.WriteFile(p, bytes.Repeat([]byte{'a'}, size), 0o644)
	s := histSandbox(t, root)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		defer f.Close()
		for i := 1; i <= 300; i++ {
			if _, err := f.WriteAt(bytes.Repeat([]byte{byte('a' + i%26)}, size), 0); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	whole, failed := 0, 0
	for i := 0; i < 30; i++ {
		cp, err := Create(ctx, s, Options{})
		if err != nil {
			if !errors.Is(err, unix.EAGAIN) || !errors.Is(err, ErrKeptChanging) {
				t.Fatal(err)
			}
			failed++
			continue
		}
		rc, _, err := OpenFile(s, cp.ID, "/hot")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(rc)
		rc.Close()
		if len(b) != size || bytes.Count(b, b[:1]) != size {
			t.Fatalf("checkpoint %d recorded a torn file (%d bytes, starts %q)", i, len(b), b[:1])
		}
		whole++
	}
	<-done
	t.Logf("%d checkpoints recorded the file whole, %d failed (it kept changing)", whole, failed)
}
