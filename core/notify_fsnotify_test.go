package core

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"sandfs/core/journal"
)

// TestNotifierAgainstFsnotify: fsnotify, an inotify reader the daemon does
// not share, judges the notifier. An outside process (sh) makes a table of
// changes in a watched root, .git included; every change fsnotify reports
// must reach the journal exactly once, with origin external. Each step
// waits for fsnotify to go quiet and for the journal to settle, so its
// events are compared with that step's journal events alone.
func TestNotifierAgainstFsnotify(t *testing.T) {
	s, root, w := watched(t)
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer fw.Close()
	if err := fw.Add(root); err != nil {
		t.Fatal(err)
	}

	steps := []struct{ name, sh string }{
		{"create", ": > a"},
		{"write", "printf hello >> a"},
		{"chmod", "chmod 600 a"},
		{"rename", "mv a b"},
		{"mkdir", "mkdir d"},
		{"create and write in a new directory", "printf x > d/f"},
		{"chmod a directory", "chmod 700 d"},
		{"rename a directory", "mv d e"},
		{"touch", "touch e/f"},
		{"remove", "rm b"},
		{"mkdir .git", "mkdir .git"},
		{"mkdir under .git", "mkdir .git/objects"},
		{"lock file under .git", "printf idx > .git/index.lock"},
		{"lock file renamed into place", "mv .git/index.lock .git/index"},
		{"write under .git", "printf more >> .git/index"},
		{"remove under .git", "rm .git/index"},
		{"remove a tree", "rm -r e"},
	}
	var cursor uint64
	judged := 0
	for _, st := range steps {
		cmd := exec.Command("sh", "-c", st.sh)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s: %s: %v %s", st.name, st.sh, err, out)
		}
		seen := fsnotifySteps(t, fw, root)
		if len(seen) == 0 {
			t.Fatalf("%s: fsnotify saw nothing", st.name)
		}
		rewatch(t, fw, root)
		judged += len(seen)
		events := settle(t, s, w, cursor)
		if len(events) > 0 {
			cursor = events[len(events)-1].Seq
		}
		for _, want := range seen {
			n := 0
			for _, e := range events {
				if e.Type == want.Type && e.Path == want.Path && e.OldPath == want.OldPath {
					n++
					if e.Origin != journal.External {
						t.Errorf("%s: %s %s told with origin %s, want external", st.name, want.Type, want.Path, e.Origin)
					}
				}
			}
			if n != 1 {
				t.Errorf("%s (%s): fsnotify saw %s %s (old %q); the journal told it %d times:\n%s",
					st.name, st.sh, want.Type, want.Path, want.OldPath, n, fmtEvents(events))
			}
		}
	}
	t.Logf("%d steps, %d changes seen by fsnotify, each told once by the journal", len(steps), judged)
}

// fsnotifySteps reads fw until it has been quiet for 150 ms and returns
// what it saw as the journal would tell it, each change once: a Rename of
// the old name followed by the Create of the new one is one rename (a
// watched directory's own MOVE_SELF repeats the Rename), and a Create of a
// directory adds a watch on it (fsnotify is not recursive).
func fsnotifySteps(t *testing.T, fw *fsnotify.Watcher, root string) []journal.Event {
	t.Helper()
	api := func(name string) string { return "/" + strings.TrimPrefix(name, root+"/") }
	var out []journal.Event
	seen := map[journal.Event]bool{}
	add := func(e journal.Event) {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	renamed := "" // the old name of a Rename waiting for its Create
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		select {
		case err := <-fw.Errors:
			t.Fatalf("fsnotify: %v", err)
		case ev := <-fw.Events:
			p := api(ev.Name)
			switch {
			case ev.Has(fsnotify.Rename):
				if !seen[journal.Event{Type: journal.Rename, OldPath: p}] {
					renamed = p
				}
			case ev.Has(fsnotify.Create):
				if renamed != "" {
					add(journal.Event{Type: journal.Rename, Path: p, OldPath: renamed})
					seen[journal.Event{Type: journal.Rename, OldPath: renamed}] = true
					renamed = ""
				} else {
					add(journal.Event{Type: journal.Create, Path: p})
				}
				if fi, err := os.Lstat(ev.Name); err == nil && fi.IsDir() {
					if err := fw.Add(ev.Name); err != nil {
						t.Fatalf("fsnotify add %s: %v", ev.Name, err)
					}
				}
			case ev.Has(fsnotify.Remove):
				add(journal.Event{Type: journal.Remove, Path: p})
			case ev.Has(fsnotify.Write):
				add(journal.Event{Type: journal.Write, Path: p})
			case ev.Has(fsnotify.Chmod):
				add(journal.Event{Type: journal.Chmod, Path: p})
			}
			continue
		case <-time.After(150 * time.Millisecond):
		}
		break
	}
	if renamed != "" {
		add(journal.Event{Type: journal.Remove, Path: renamed}) // moved out
	}
	return out
}

// rewatch watches every directory under root again. fsnotify is not
// recursive, and after a directory rename its watch may be gone: the
// kernel gives the new name's watch the same descriptor as the old one's,
// and fsnotify drops that descriptor when it reads the old name's
// MOVE_SELF, which it may do after the Add of the new name.
func rewatch(t *testing.T, fw *fsnotify.Watcher, root string) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		return fw.Add(p)
	})
	if err != nil {
		t.Fatalf("fsnotify rewatch: %v", err)
	}
}
