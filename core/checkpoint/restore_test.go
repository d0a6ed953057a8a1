package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/journal"
)

// Restoring a checkpoint: the whole tree or some paths, hostile paths and
// symlinks, racing writes, by actor.

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

	scanUsage(t, s) // the outside changes above counted, as a scan would soon
	res, err := Restore(ctx, s, RestoreOptions{Checkpoint: cp.ID})
	if err != nil {
		t.Fatal(err)
	}
	sameTree(t, "after the restore", want, treeDigest(t, root))
	if got, scan := s.Quota().Usage(), scanUsage(t, s); got.Bytes != scan.Bytes || got.Entries != scan.Entries {
		t.Errorf("usage after the restore %+v, a scan finds %+v", got, scan)
	}
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

func TestRestoreRacingWrites(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "hot"), hotVersion(0), 0o644)
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	done := raceHot(t, s)
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
		wantWholeHot(t, root)
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
