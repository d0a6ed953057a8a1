package core

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/core/journal"
	"sandfs/internal/testenv"
)

// TestOpenMade: a root opened with Options.Made (a fork's, made now from
// a checkpoint's tree) is watched from that list, not from reading its
// directories: a directory the list leaves out is not watched (the
// control that shows the list was taken), a write deep in one it names is
// heard; and its start-up sweep does not walk it (a temp-named file is
// left: a checkpoint's tree holds none, so there is nothing to sweep).
func TestOpenMade(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"a/b/c", "x"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	temp := TempPrefix + "0123456789abcdef.part"
	for _, f := range []string{"a/one.txt", "a/b/c/two.txt", "x/three.txt", temp} {
		if err := os.WriteFile(filepath.Join(root, f), []byte(f), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	made := map[string][]string{"/": {"a"}, "/a": {"b"}, "/a/b": {"c"}, "/a/b/c": nil}
	s, err := Open("made", root, Options{Made: made})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); s.Close() })
	var logs testenv.Buffer
	if err := s.StartWatching(ctx, slog.New(slog.NewTextHandler(&logs, nil))); err != nil {
		t.Fatal(err)
	}
	<-s.Watch().Ready()
	<-s.SweepDone()
	if !strings.Contains(logs.String(), "directories=4") {
		t.Errorf("the watch's log %q: want the 4 directories the list names", logs.String())
	}
	if _, err := os.Lstat(filepath.Join(root, temp)); err != nil {
		t.Errorf("the sweep walked the made tree: %v", err)
	}
	w, _, _, err := s.Journal().Watch(journal.Config{Path: "/", Recursive: true, Exclude: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a/b/c/new.txt"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	es := settle(t, s, w, 0)
	if got := fmtEvents(es); !strings.Contains(got, "external create /a/b/c/new.txt") {
		t.Errorf("events %q: want the outside create deep in the made tree", got)
	}
}
