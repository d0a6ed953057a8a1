// Package coretest holds what the tests of core's subpackages need of a
// Sandbox: one opened on a fresh root in each resolution mode. It is
// imported by tests only; core's own tests cannot import it (it imports
// core) and keep their copy in core/helpers_test.go.
package coretest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/core/journal"
)

// Modes runs f once with openat2 resolution (where the kernel has it) and
// once with the user-space walk, each on a fresh root.
func Modes(t *testing.T, f func(t *testing.T, s *core.Sandbox, root string)) {
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			s, err := core.Open("default", root, core.Options{NoOpenat2: walk})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if !walk && !s.Root().Openat2() {
				t.Log("openat2 unavailable here; both runs use the walk")
			}
			f(t, s, root)
		})
	}
}

// Watched is a sandbox on a fresh root whose kernel watch is running and
// ready, with a watcher of the whole tree.
func Watched(t *testing.T) (*core.Sandbox, string, *journal.Watcher) {
	t.Helper()
	root := t.TempDir()
	s, err := core.Open("default", root, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); s.Close() })
	if err := s.StartWatching(ctx, nil); err != nil {
		t.Fatal(err)
	}
	<-s.Watch().Ready()
	w, _, _, err := s.Journal().Watch(journal.Config{Path: "/", Recursive: true, Exclude: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	return s, root, w
}

// SettleOutside waits until the kernel watch has told every change made
// directly in the root so far: it makes one more (empty) file there and
// waits for its create, which inotify queues after them.
func SettleOutside(t *testing.T, s *core.Sandbox, root string) {
	t.Helper()
	seq := s.Journal().Seq()
	name := ".settle-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	if err := os.WriteFile(filepath.Join(root, name), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		evs, _ := s.Journal().Since(seq, journal.RingSize)
		for _, e := range evs {
			if e.Path == "/"+name {
				return
			}
		}
	}
	t.Fatalf("the kernel watch did not tell /%s in 10 s", name)
}
