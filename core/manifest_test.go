package core

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"sandfs/core/journal"
)

// durable opens root as a sandbox keeping its journal in state, watched,
// and waits for the comparison at start.
func durable(t *testing.T, root, state string) (*Sandbox, func()) {
	t.Helper()
	s, err := Open("default", root, Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.StartWatching(ctx, nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Reconciled():
	case <-time.After(20 * time.Second):
		t.Fatal("the comparison at start did not end")
	}
	return s, func() {
		cancel()
		time.Sleep(20 * time.Millisecond) // the reader's last flush
		s.Close()
	}
}

func eventsAfter(t *testing.T, s *Sandbox, seq uint64) []string {
	t.Helper()
	var out []string
	if _, err := s.Journal().Scan(context.Background(), seq, func(e journal.Event) bool {
		tag := ""
		if e.FoundAtStart {
			tag = " found"
		}
		out = append(out, string(e.Type)+" "+e.Path+" "+string(e.Origin)+tag)
		return true
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// Changes made while the daemon was down are told once, at the next start,
// as external events found at start; a start with nothing changed tells
// nothing; and the numbering goes on.
func TestChangesFoundAtStart(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	mk(t, root, map[string]string{"keep.txt": "same", "edit.txt": "old", "gone.txt": "x", "dir/": "", "dir/sub/": "", "dir/sub/f": "1", "mode.sh": "#!"})
	s, stop := durable(t, root, state)
	ctx := WithActor(context.Background(), Actor{Origin: journal.API, Name: "agent-1"})
	if _, err := s.WriteFile(ctx, "/api.txt", strings.NewReader("by the api"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	seq := s.Journal().Seq()
	if seq == 0 {
		t.Fatal("no event for the api write")
	}
	stop()

	// The daemon is down.
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(root, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("edit.txt", "new and longer")
	write("new.txt", "made while down")
	os.Mkdir(filepath.Join(root, "newdir"), 0o755)
	write("newdir/inner", "i")
	os.Remove(filepath.Join(root, "gone.txt"))
	os.RemoveAll(filepath.Join(root, "dir/sub"))
	os.Chmod(filepath.Join(root, "mode.sh"), 0o755)

	s, stop = durable(t, root, state)
	got := eventsAfter(t, s, seq)
	sort.Strings(got)
	want := []string{
		"chmod /mode.sh external found",
		"create /new.txt external found",
		"create /newdir external found",
		"create /newdir/inner external found",
		"remove /dir/sub external found",
		"remove /dir/sub/f external found",
		"remove /gone.txt external found",
		"write /edit.txt external found",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("found at start:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if first := s.Journal().Seq() - uint64(len(want)) + 1; first != seq+1 {
		t.Fatalf("the found events start at seq %d, want %d", first, seq+1)
	}
	seq = s.Journal().Seq()
	stop()

	s, stop = durable(t, root, state)
	defer stop()
	if got := eventsAfter(t, s, seq); len(got) != 0 {
		t.Fatalf("a start with nothing changed told %v", got)
	}
	if s.Journal().Seq() != seq {
		t.Fatalf("seq %d after a quiet restart, want %d", s.Journal().Seq(), seq)
	}
}

// A manifest is the replay of the events after it: a change the daemon
// told before it stopped (after the last manifest was written) is not told
// again at start.
func TestReplayCoversEventsAfterManifest(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	s, stop := durable(t, root, state)
	for _, p := range []string{"/a", "/b", "/c"} {
		if _, err := s.WriteFile(context.Background(), p, strings.NewReader(p), WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Move(context.Background(), "/a", "/moved", MoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(context.Background(), "/b", false); err != nil {
		t.Fatal(err)
	}
	seq := s.Journal().Seq()
	stop()
	s, stop = durable(t, root, state)
	defer stop()
	if got := eventsAfter(t, s, seq); len(got) != 0 {
		t.Fatalf("told again at start: %v", got)
	}
}

// TestTempsNeverTold: the daemon's own temp names, left by a daemon killed
// mid-write, are never told: not found at start, not as the sweep's
// removals heard by the kernel watch.
func TestTempsNeverTold(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	s, stop := durable(t, root, state)
	seq := s.Journal().Seq()
	stop()

	// The daemon is down, killed mid-write and mid-tar: a temp file and a
	// staging tree are left, and a real change is made.
	old := time.Now().Add(-time.Hour)
	mk(t, root, map[string]string{
		".sandfs-0123456789abcdef.part":          "half",
		"d/.sandfs-upload-fedcba9876543210.part": "up",
		"d/.sandfs-00112233445566ff.part/x/y":    "staged",
		"real.txt":                               "made while down",
	})
	for _, p := range []string{".sandfs-0123456789abcdef.part", "d/.sandfs-upload-fedcba9876543210.part", "d/.sandfs-00112233445566ff.part"} {
		must(t, os.Chtimes(filepath.Join(root, p), old, old))
	}
	s, stop = durable(t, root, state)
	defer stop()
	<-s.SweepDone()
	got := eventsAfter(t, s, seq)
	for _, e := range got {
		if strings.Contains(e, TempPrefix) {
			t.Errorf("a temp name was told: %s (all: %v)", e, got)
		}
	}
	if !slices.Contains(got, "create /real.txt external found") {
		t.Errorf("the real change was not found at start: %v", got)
	}
	// A leftover the sweep removes while the kernel watch runs (made here
	// by an outside writer, which is told).
	mk(t, root, map[string]string{"e/.sandfs-aaaaaaaaaaaaaaaa.part/z": "z"})
	must(t, os.Chtimes(filepath.Join(root, "e/.sandfs-aaaaaaaaaaaaaaaa.part"), old, old))
	w, _, _, err := s.Journal().Watch(journal.Config{Path: "/", Recursive: true, Exclude: []string{}})
	must(t, err)
	cursor := s.Journal().Seq()
	settle(t, s, w, cursor)
	cursor = s.Journal().Seq()
	if n := (&sweep{before: time.Now(), watch: s.watch}).dir(s.root.fd, "/"); n != 1 {
		t.Fatalf("the sweep removed %d, want 1", n)
	}
	if _, err := os.Lstat(filepath.Join(root, "e/.sandfs-aaaaaaaaaaaaaaaa.part")); !os.IsNotExist(err) {
		t.Fatalf("the leftover is still there: %v", err)
	}
	if got := settle(t, s, w, cursor); len(got) != 0 {
		t.Errorf("the sweep's removal was told:\n%s", fmtEvents(got))
	}
}
