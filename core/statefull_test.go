package core

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/internal/testenv"
)

// TestStateFull: while the journal cannot store events for want of space,
// a change that grows the tree is refused (ENOSPC, ErrStateFull) and the
// old content kept, a remove still goes; once space returns the refusals
// end by themselves and every change made is in the journal, told once.
func TestStateFull(t *testing.T) {
	state := testenv.Tmpfs(t, "size=40m") // the tail takes 32 MiB of it
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "keep.txt"), []byte("old"), 0o644))
	must(t, os.WriteFile(filepath.Join(root, "gone.txt"), []byte("x"), 0o644))
	s, err := Open("default", root, Options{StateDir: state})
	must(t, err)
	defer s.Close()
	filler := testenv.Fill(t, state)
	// Changes until a commit fails: each one's event waits for the writer,
	// whose next batch finds the disk full.
	deadline := time.Now().Add(time.Minute)
	for i := 0; !s.StateFull(); i++ {
		if time.Now().After(deadline) {
			t.Fatal("the journal never reported its disk full")
		}
		if err := s.Mkdir(ctx, "/d"+strings.Repeat("x", i%50), true, 0o755); err != nil && !errors.Is(err, ErrStateFull) {
			t.Fatal(err)
		}
		s.hist.Sync() // fails, and sets the state
	}
	if got := s.HistoryTrouble(); got != "state disk full" {
		t.Errorf("HistoryTrouble = %q", got)
	}
	seqBefore := s.journal.Seq()
	cases := []struct {
		name string
		do   func() error
	}{
		{"replace a file", func() error {
			_, err := s.WriteFile(ctx, "/keep.txt", strings.NewReader("new content"), WriteOptions{})
			return err
		}},
		{"create a file", func() error {
			_, err := s.WriteFile(ctx, "/new.txt", strings.NewReader("n"), WriteOptions{})
			return err
		}},
		{"mkdir", func() error { return s.Mkdir(ctx, "/newdir", false, 0o755) }},
	}
	for _, c := range cases {
		err := c.do()
		if !errors.Is(err, ErrStateFull) || !errors.Is(err, unix.ENOSPC) {
			t.Errorf("%s with the state disk full: %v, want ErrStateFull (ENOSPC)", c.name, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(root, "keep.txt")); string(b) != "old" {
		t.Errorf("keep.txt = %q after a refused write, want the old content", b)
	}
	for _, p := range []string{"new.txt", "newdir"} {
		if _, err := os.Lstat(filepath.Join(root, p)); !os.IsNotExist(err) {
			t.Errorf("%s exists after a refused create: %v", p, err)
		}
	}
	// Freeing space is allowed.
	must(t, s.Remove(ctx, "/gone.txt", false))
	if s.journal.Seq() != seqBefore+1 {
		t.Errorf("seq %d after the refusals and a remove, want %d (one event)", s.journal.Seq(), seqBefore+1)
	}

	must(t, os.Remove(filler))
	deadline = time.Now().Add(time.Minute)
	for s.StateFull() {
		if time.Now().After(deadline) {
			t.Fatal("still refusing a minute after space returned")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := s.WriteFile(ctx, "/keep.txt", strings.NewReader("new"), WriteOptions{}); err != nil {
		t.Fatalf("a write once space returned: %v", err)
	}
	must(t, s.hist.Sync())
	if got := s.HistoryTrouble(); got != "" {
		t.Errorf("HistoryTrouble = %q once space returned", got)
	}
	// Every change made is stored, the remove among them.
	removes := 0
	_, err = s.journal.Scan(ctx, 0, func(e journal.Event) bool {
		if e.Path == "/gone.txt" && e.Type == journal.Remove {
			removes++
		}
		return true
	})
	must(t, err)
	if removes != 1 {
		t.Errorf("the remove made while the disk was full is told %d times, want once", removes)
	}
}

// TestStateRemoved: a state directory removed under the daemon is noticed
// by itself; a change that grows the tree is then refused (its event
// would go to an unlinked file), the old content kept.
func TestStateRemoved(t *testing.T) {
	state := filepath.Join(t.TempDir(), "state")
	root := t.TempDir()
	must(t, os.WriteFile(filepath.Join(root, "keep.txt"), []byte("old"), 0o644))
	s, err := Open("default", root, Options{StateDir: state})
	must(t, err)
	defer s.Close()
	if _, err := s.WriteFile(ctx, "/before.txt", strings.NewReader("b"), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	must(t, os.RemoveAll(state))
	deadline := time.Now().Add(time.Minute)
	for s.HistoryTrouble() != "state directory removed" {
		if time.Now().After(deadline) {
			t.Fatalf("the removed state directory not noticed in a minute: %q", s.HistoryTrouble())
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, err = s.WriteFile(ctx, "/keep.txt", strings.NewReader("longer new content"), WriteOptions{})
	if !errors.Is(err, ErrStateRemoved) || !errors.Is(err, unix.ENOSPC) {
		t.Errorf("a write with the state directory removed: %v, want ErrStateRemoved (ENOSPC)", err)
	}
	if b, _ := os.ReadFile(filepath.Join(root, "keep.txt")); string(b) != "old" {
		t.Errorf("keep.txt = %q after a refused write", b)
	}
	if err := s.Mkdir(ctx, "/newdir", false, 0o755); !errors.Is(err, ErrStateRemoved) {
		t.Errorf("a mkdir with the state directory removed: %v, want ErrStateRemoved", err)
	}
}

// TestOneDaemonPerRoot: a root served with state is locked: a second
// sandbox on it, with another state directory, is refused until the first
// is closed.
func TestOneDaemonPerRoot(t *testing.T) {
	root := t.TempDir()
	a, err := Open("default", root, Options{StateDir: t.TempDir()})
	must(t, err)
	if b, err := Open("default", root, Options{StateDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("served by another daemon (pid %d)", os.Getpid())) {
		if b != nil {
			b.Close()
		}
		t.Fatalf("a second sandbox on the same root: %v, want refused", err)
	}
	a.Close()
	b, err := Open("default", root, Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	b.Close()
}
