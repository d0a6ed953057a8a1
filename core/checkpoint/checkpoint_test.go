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
	"sandfs/core/journal"
	"sandfs/internal/testenv"
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
// (not of symlinks), link target or content hash; the root too.
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

func countObjects(t testing.TB, s *core.Sandbox) int {
	n := 0
	filepath.WalkDir(filepath.Join(s.StateDir(), "objects"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			n++
		}
		return nil
	})
	return n
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

// changeThings makes one of each change the restore must undo.
func changeThings(t *testing.T, s *core.Sandbox, root string) {
	t.Helper()
	write(t, s, "/a.txt", "alpha, changed")
	if err := s.Remove(ctx, "/d/b.txt", false); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Chmod(ctx, "/x.sh", 0o600, false); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a.txt", filepath.Join(root, "newlink")); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "/empty", false); err != nil {
		t.Fatal(err)
	}
	write(t, s, "/new/one.txt", "one")
	write(t, s, "/d/two.txt", "two")
	if err := os.Remove(filepath.Join(root, "ln")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("d", filepath.Join(root, "ln")); err != nil { // retargeted
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(root, "kind")); err != nil {
		t.Fatal(err)
	}
	write(t, s, "/kind/now-a-dir.txt", "a dir where a file was")
}

func restoreTree(t *testing.T) (string, map[string]string) {
	root := t.TempDir()
	mk(t, root, map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "d/c.txt": "gamma", "empty/": "",
		"ln": "->a.txt", "x.sh": "#!/bin/sh\n", "kind": "a file", "deep/er/est/f": "f"})
	os.Chmod(filepath.Join(root, "x.sh"), 0o755)
	os.Chmod(filepath.Join(root, "d"), 0o750)
	return root, treeDigest(t, root)
}

func TestRestoreWholeTreeAndUndo(t *testing.T) {
	root, want := restoreTree(t)
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	changeThings(t, s, root)
	changed := treeDigest(t, root)

	dry, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the dry run", changed, treeDigest(t, root))
	if dry.Undo != "" || !dry.DryRun {
		t.Errorf("dry run %+v", dry)
	}
	wantWritten := []string{"/a.txt", "/d/b.txt", "/empty", "/kind", "/ln", "/x.sh"}
	wantRemoved := []string{"/d/two.txt", "/new", "/newlink"}
	if fmt.Sprint(dry.Written) != fmt.Sprint(wantWritten) || fmt.Sprint(dry.Removed) != fmt.Sprint(wantRemoved) || len(dry.Skipped) != 0 {
		t.Errorf("dry run: written %v removed %v skipped %v", dry.Written, dry.Removed, dry.Skipped)
	}
	if list, _ := List(s); len(list) != 1 {
		t.Errorf("a dry run took a checkpoint: %d", len(list))
	}

	res, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID})
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the restore", want, treeDigest(t, root))
	if fmt.Sprint(res.Written) != fmt.Sprint(wantWritten) || fmt.Sprint(res.Removed) != fmt.Sprint(wantRemoved) || len(res.Skipped) != 0 {
		t.Errorf("restore: written %v removed %v skipped %v", res.Written, res.Removed, res.Skipped)
	}
	undo, err := ByID(s, res.Undo)
	if err != nil || undo.Reason != ReasonBeforeRestore {
		t.Fatalf("undo checkpoint %+v %v", undo, err)
	}
	// The restore's changes are journaled as its own.
	seen := map[string]bool{}
	s.Journal().Scan(ctx, undo.Seq, func(e journal.Event) bool {
		if e.Origin != "api" || e.Actor != "restore:"+cp.ID {
			t.Errorf("event %+v not the restore's", e)
		}
		seen[e.Path] = true
		return true
	})
	for _, p := range append(wantWritten, wantRemoved...) {
		if !seen[p] {
			t.Errorf("no event for %s", p)
		}
	}

	if _, err := Restore(ctx, s, RestoreOptions{Checkpoint: res.Undo}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the undo", changed, treeDigest(t, root))
}

func TestRestorePaths(t *testing.T) {
	root, want := restoreTree(t)
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	changeThings(t, s, root)
	res, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID, Paths: []string{"/d", "a.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Written) != "[/a.txt /d/b.txt]" || fmt.Sprint(res.Removed) != "[/d/two.txt]" {
		t.Errorf("written %v removed %v", res.Written, res.Removed)
	}
	got := treeDigest(t, root)
	for _, p := range []string{"a.txt", "d", "d/b.txt", "d/c.txt"} {
		if got[p] != want[p] {
			t.Errorf("%s: %q, want %q", p, got[p], want[p])
		}
	}
	if _, ok := got["d/two.txt"]; ok {
		t.Error("d/two.txt is still there")
	}
	if _, ok := got["new/one.txt"]; !ok {
		t.Error("new/one.txt, outside the paths, was removed")
	}
}

func TestRestoreHostilePaths(t *testing.T) {
	root, _ := restoreTree(t)
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	changeThings(t, s, root)
	before := treeDigest(t, root)
	for _, paths := range [][]string{
		{"/a.txt", "../../etc/passwd"},
		{"/d/.."},
		{"/a.txt", "a\x00b"},
		{""},
		{"/" + strings.Repeat("x", 256)},
		{"/" + strings.Repeat("a/", 2100)},
		{"/a.txt", filepath.Join(root, "a.txt")},
	} {
		_, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID, Paths: paths})
		var pe *RestorePathError
		if !errors.As(err, &pe) || !errors.Is(err, unix.EINVAL) {
			t.Errorf("%.40q: %v", paths, err)
		}
	}
	sameTree(t, "after hostile restores", before, treeDigest(t, root))
	if list, _ := List(s); len(list) != 1 {
		t.Errorf("a refused restore took a checkpoint")
	}
}

func TestRestoreDoesNotFollowSymlinks(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	mk(t, root, map[string]string{"d/f": "inside"})
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	// d becomes a symlink to a host directory: the restore must put a
	// directory back, never write into the link's target.
	os.RemoveAll(filepath.Join(root, "d"))
	os.Symlink(outside, filepath.Join(root, "d"))
	if _, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID}); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "d", "f")); err != nil || string(b) != "inside" {
		t.Errorf("d/f: %q %v", b, err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "d")); err != nil || !fi.IsDir() {
		t.Errorf("d is not a directory again: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("the restore wrote outside the root: %v", ents)
	}
}

func TestCheckpointIncrementalReadsOnlyChanged(t *testing.T) {
	root := t.TempDir()
	for i := 0; i < 200; i++ {
		p := filepath.Join(root, fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%d", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(fmt.Sprintf("file %d", i)), 0o644)
	}
	s := histSandbox(t, root)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := s.StartWatching(wctx, nil); err != nil {
		testenv.Skip(t, nil, "no kernel watch here: %v", err)
	}
	<-s.Watch().Ready()
	first := mustCheckpoint(t, s, Options{})
	if r := FilesRead(s); r != 200 {
		t.Fatalf("first checkpoint read %d files, want 200", r)
	}
	for i := 0; i < 5; i++ {
		write(t, s, fmt.Sprintf("/d%d/f%d", i, i), fmt.Sprintf("changed %d", i))
	}
	write(t, s, "/d3/new", "new")
	if err := s.Remove(ctx, "/d9", true); err != nil {
		t.Fatal(err)
	}
	second := mustCheckpoint(t, s, Options{})
	if h, _ := storeOf(s); h.walks.Load() != 1 {
		t.Errorf("%d whole-tree walks, want 1 (the first checkpoint's)", h.walks.Load())
	}
	if r := FilesRead(s) - 200; r != 6 {
		t.Errorf("the second checkpoint read %d files, want 6", r)
	}
	if second.Files != 200-20+1 || second.NewBytes != int64(5*len("changed 0")+3) {
		t.Errorf("second %+v (first %+v)", second, first)
	}
	// The delta chain gives the same tree as a walk.
	third := mustCheckpoint(t, s, Options{})
	if r := FilesRead(s) - 206; r != 0 || third.NewBytes != 0 || third.Files != second.Files {
		t.Errorf("nothing changed, yet %d reads, %+v", r, third)
	}
	mkTree := func(id string) map[string]cpEntry {
		h, _ := storeOf(s)
		h.last = nil
		tr, err := h.tree(id)
		if err != nil {
			t.Fatal(err)
		}
		return tr.files
	}
	walked := newBuilder(ctx, s, &cpStore{}, nil, false, nil)
	if err := walked.full(); err != nil {
		t.Fatal(err)
	}
	got := mkTree(third.ID)
	for p, e := range walked.set {
		if g := got[p]; g.Hash != e.Hash || g.Kind != e.Kind || g.Perm != e.Perm {
			t.Errorf("%s: chain %+v, walk %+v", p, g, e)
		}
	}
	if len(got) != len(walked.set) {
		t.Errorf("chain has %d entries, walk %d", len(got), len(walked.set))
	}
}

func TestRestoreRacingWrites(t *testing.T) {
	root := t.TempDir()
	versions := map[string]bool{}
	big := func(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 256<<10+i) }
	os.WriteFile(filepath.Join(root, "hot"), big(0), 0o644)
	versions[string(big(0))] = true
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	const rounds = 100
	for i := 1; i <= rounds; i++ {
		versions[string(big(i))] = true
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= rounds; i++ {
			if _, err := s.WriteFile(ctx, "/hot", bytes.NewReader(big(i)), core.WriteOptions{}); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Duration(i%3) * time.Millisecond)
		}
	}()
	written, raced := 0, 0
	for i := 0; i < 20; i++ {
		res, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID, Paths: []string{"/hot"}})
		if err != nil {
			t.Fatal(err)
		}
		written += len(res.Written)
		raced += len(res.Skipped)
		for _, sk := range res.Skipped {
			if sk.Reason != skipRaced {
				t.Errorf("skip %+v", sk)
			}
		}
		b, err := os.ReadFile(filepath.Join(root, "hot"))
		if err != nil || !versions[string(b)] {
			t.Fatalf("torn file: %d bytes, %v", len(b), err)
		}
	}
	<-done
	t.Logf("%d restores wrote, %d were skipped as raced", written, raced)
	ents, _ := os.ReadDir(root)
	if len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

func TestRestoreByActor(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"a.txt": "a", "b.txt": "b", "c.txt": "c", "keep.txt": "keep", "sub/x": "x"})
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	agent := core.WithActor(ctx, core.Actor{Origin: journal.API, Name: "agent"})
	person := core.WithActor(ctx, core.Actor{Origin: journal.Mirror, Pid: 42, Comm: "vim"})
	alice := core.WithActor(ctx, core.Actor{Origin: journal.API, Name: "alice"})
	do := func(c context.Context, p, content string) {
		t.Helper()
		if _, err := s.WriteFile(c, p, strings.NewReader(content), core.WriteOptions{MkdirParents: true}); err != nil {
			t.Fatal(err)
		}
	}
	do(agent, "/a.txt", "agent's a")
	do(agent, "/b.txt", "agent's b")
	do(agent, "/new.txt", "agent's new")
	do(agent, "/sub/y", "agent's y")
	if err := s.Remove(agent, "/c.txt", false); err != nil {
		t.Fatal(err)
	}
	do(person, "/b.txt", "the person's b, after the agent")
	do(alice, "/keep.txt", "alice's keep")
	do(alice, "/sub/x", "alice's x")

	dry, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID, Actor: "agent", DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID, Actor: "agent"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []RestoreResult{dry, res} {
		if fmt.Sprint(r.Written) != "[/a.txt /c.txt]" || fmt.Sprint(r.Removed) != "[/new.txt /sub/y]" {
			t.Errorf("dry %v: written %v removed %v", r.DryRun, r.Written, r.Removed)
		}
		want := []RestoreSkip{{Path: "/b.txt", Reason: "changed by fuse:vim[42] after agent", By: "fuse:vim[42]"}}
		if fmt.Sprint(r.Skipped) != fmt.Sprint(want) {
			t.Errorf("dry %v: skipped %+v, want %+v", r.DryRun, r.Skipped, want)
		}
	}
	for p, want := range map[string]string{"a.txt": "a", "b.txt": "the person's b, after the agent", "c.txt": "c",
		"keep.txt": "alice's keep", "sub/x": "alice's x"} {
		if b, err := os.ReadFile(filepath.Join(root, p)); err != nil || string(b) != want {
			t.Errorf("%s: %q %v, want %q", p, b, err, want)
		}
	}
	for _, p := range []string{"new.txt", "sub/y"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there: %v", p, err)
		}
	}

	// By command name: the person's edit is theirs to undo.
	res, err = Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID, Actor: "fuse:vim"})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Written) != "[/b.txt]" || len(res.Skipped) != 0 {
		t.Errorf("fuse:vim: %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "b.txt")); string(b) != "b" {
		t.Errorf("b.txt %q", b)
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

// TestCheckpointChainCompacts: the checkpoint at depth 32 becomes a base,
// and every checkpoint of the chain restores its own tree.
func TestCheckpointChainCompacts(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"f": "v0", "g": "g"})
	s := histSandbox(t, root)
	var ids []string
	for i := 0; i <= compactEvery+2; i++ {
		write(t, s, "/f", fmt.Sprint("v", i))
		write(t, s, fmt.Sprintf("/n%d", i), "n")
		ids = append(ids, mustCheckpoint(t, s, Options{}).ID)
		if i == compactEvery {
			// The base is written after the checkpoint answers: until it
			// is, the next ones count their depth from the long chain and
			// are compacted too (CI saw it on a loaded machine).
			h, _ := storeOf(s)
			h.compacting.Wait()
		}
	}
	h, _ := storeOf(s)
	h.compacting.Wait()
	h.mu.Lock()
	if hd := h.hdrs[ids[compactEvery]]; hd.Parent != "" || hd.Depth != 0 {
		t.Errorf("checkpoint %d: parent %q depth %d, want a base", compactEvery, hd.Parent, hd.Depth)
	}
	if hd := h.hdrs[ids[compactEvery+2]]; hd.Parent != ids[compactEvery+1] {
		t.Errorf("the chain goes on from the base: parent %q", hd.Parent)
	}
	h.mu.Unlock()
	for _, i := range []int{3, compactEvery - 1, compactEvery, compactEvery + 2} {
		if _, err := Restore(ctx, s, RestoreOptions{Checkpoint: ids[i]}); err != nil {
			t.Fatal(err)
		}
		if b, _ := os.ReadFile(filepath.Join(root, "f")); string(b) != fmt.Sprint("v", i) {
			t.Errorf("restore of %d: f = %q", i, b)
		}
		if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("n%d", i+1))); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("restore of %d: n%d is there", i, i+1)
		}
		if _, err := os.Stat(filepath.Join(root, fmt.Sprintf("n%d", i))); err != nil {
			t.Errorf("restore of %d: n%d: %v", i, i, err)
		}
	}
}

// TestCheckpointDeleteInChain: deleting a delta folds it into its child,
// deleting a base makes its child one; the others restore whole, and the
// store keeps exactly the contents still named.
func TestCheckpointDeleteInChain(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"f": "A", "only-a": "a"})
	s := histSandbox(t, root)
	a := mustCheckpoint(t, s, Options{})
	write(t, s, "/f", "B")
	s.Remove(ctx, "/only-a", false)
	b := mustCheckpoint(t, s, Options{})
	write(t, s, "/g", "C")
	c := mustCheckpoint(t, s, Options{})
	want := treeDigest(t, root)
	h, _ := storeOf(s)
	if err := Delete(s, b.ID); err != nil {
		t.Fatal(err)
	}
	if hd := h.hdrs[c.ID]; hd.Parent != a.ID {
		t.Errorf("c's parent %q, want a %q", hd.Parent, a.ID)
	}
	if n := countObjects(t, s); n != 4 { // A, a, C, and B which c still has
		t.Errorf("%d objects, want 4", n)
	}
	if err := Delete(s, a.ID); err != nil {
		t.Fatal(err)
	}
	if hd := h.hdrs[c.ID]; hd.Parent != "" {
		t.Errorf("c's parent %q, want none (a base)", hd.Parent)
	}
	if n := countObjects(t, s); n != 2 { // B, C
		t.Errorf("%d objects, want 2", n)
	}
	write(t, s, "/f", "changed")
	write(t, s, "/only-a", "back")
	h.last, h.other = nil, nil // read c back from its manifest
	if _, err := Restore(ctx, s, RestoreOptions{Checkpoint: c.ID}); err != nil {
		t.Fatal(err)
	}
	sameTree(t, "restore of c", want, treeDigest(t, root))
}

// TestRestoreMakesMissingParents: restoring one file whose directories are
// gone makes them again as the checkpoint had them.
func TestRestoreMakesMissingParents(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"a/b/c.txt": "c", "a/b/other": "o", "x": "x"})
	os.Chmod(filepath.Join(root, "a"), 0o711)
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	if err := s.Remove(ctx, "/a", true); err != nil {
		t.Fatal(err)
	}
	write(t, s, "/a", "a file where the directory was")
	res, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID, Paths: []string{"/a/b/c.txt"}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Written) != "[/a /a/b /a/b/c.txt]" || len(res.Skipped) != 0 {
		t.Errorf("%+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "a/b/c.txt")); string(b) != "c" {
		t.Errorf("c.txt %q", b)
	}
	if fi, err := os.Stat(filepath.Join(root, "a")); err != nil || fi.Mode().Perm() != 0o711 {
		t.Errorf("a: %v %v", fi.Mode(), err)
	}
	if _, err := os.Stat(filepath.Join(root, "a/b/other")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("other, outside the paths, came back: %v", err)
	}
}
