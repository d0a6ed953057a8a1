package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
)

// TestJournalUnderDefaultExcludes: .git and node_modules are watched like
// every directory. An outside change there is told once, as external; a
// change the daemon makes there is told once, as api (its echo is
// claimed, not told again). A watcher with the default excludes still
// sees none of it.
func TestJournalUnderDefaultExcludes(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   map[string]string
		act     func(t *testing.T, s *Sandbox, root string)
		want    string
		covered string // a path Watch().Covers must be true for after act
	}{
		{"outside changes under .git",
			map[string]string{".git/refs/heads/": "", ".git/HEAD": "ref: refs/heads/main\n"},
			func(t *testing.T, s *Sandbox, root string) {
				g := filepath.Join(root, ".git")
				must(t, os.WriteFile(filepath.Join(g, "index.lock"), []byte("i"), 0o644))
				sleepALittle()
				must(t, os.Rename(filepath.Join(g, "index.lock"), filepath.Join(g, "index")))
				sleepALittle()
				must(t, os.Mkdir(filepath.Join(g, "objects"), 0o755))
				sleepALittle()
				must(t, os.Mkdir(filepath.Join(g, "objects", "ab"), 0o755))
				sleepALittle()
				must(t, os.WriteFile(filepath.Join(g, "objects", "ab", "cdef"), nil, 0o444))
				sleepALittle()
				f, err := os.OpenFile(filepath.Join(g, "HEAD"), os.O_WRONLY|os.O_APPEND, 0)
				must(t, err)
				f.WriteString("x")
				f.Close()
				sleepALittle()
				must(t, os.Remove(filepath.Join(g, "index")))
			},
			"external create /.git/index.lock\nexternal write /.git/index.lock\n" +
				"external rename /.git/index <- /.git/index.lock\n" +
				"external create /.git/objects\nexternal create /.git/objects/ab\nexternal create /.git/objects/ab/cdef\n" +
				"external write /.git/HEAD\nexternal remove /.git/index",
			"/.git/objects/ab/cdef"},
		{"outside changes under node_modules",
			map[string]string{"node_modules/pkg/lib/a.js": "a"},
			func(t *testing.T, s *Sandbox, root string) {
				nm := filepath.Join(root, "node_modules", "pkg")
				must(t, os.WriteFile(filepath.Join(nm, "lib", "b.js"), nil, 0o644))
				sleepALittle()
				// A directory renamed in is walked for what changed at or
				// after its rename's ctime (watch/notify.go, renamed): b.js must
				// be older than that, and the kernel's clock is coarse.
				afterCtimeOf(t, filepath.Join(nm, "lib", "b.js"))
				must(t, os.Rename(filepath.Join(nm, "lib"), filepath.Join(nm, "dist")))
				sleepALittle()
				must(t, os.WriteFile(filepath.Join(nm, "dist", "c.js"), nil, 0o644))
				sleepALittle()
				must(t, os.Remove(filepath.Join(nm, "dist", "a.js")))
			},
			"external create /node_modules/pkg/lib/b.js\n" +
				"external rename /node_modules/pkg/dist <- /node_modules/pkg/lib\n" +
				"external create /node_modules/pkg/dist/c.js\nexternal remove /node_modules/pkg/dist/a.js",
			"/node_modules/pkg/dist/c.js"},
		{"api changes under .git are told once",
			map[string]string{".git/HEAD": "ref: refs/heads/main\n"},
			func(t *testing.T, s *Sandbox, root string) {
				_, err := s.WriteFile(ctx, "/.git/HEAD.lock", strings.NewReader("ref: x\n"), WriteOptions{})
				must(t, err)
				must(t, s.Move(ctx, "/.git/HEAD.lock", "/.git/HEAD", MoveOptions{Overwrite: true}))
				must(t, s.Mkdir(ctx, "/.git/objects/ab", true, 0o755))
				_, err = s.WriteFile(ctx, "/.git/objects/ab/cd", strings.NewReader("o"), WriteOptions{})
				must(t, err)
				must(t, s.Remove(ctx, "/.git/objects", true))
			},
			"api create /.git/HEAD.lock\napi write /.git/HEAD.lock\napi remove /.git/HEAD\napi rename /.git/HEAD <- /.git/HEAD.lock\n" +
				"api create /.git/objects\napi create /.git/objects/ab\napi create /.git/objects/ab/cd\napi write /.git/objects/ab/cd\n" +
				"api remove /.git/objects",
			"/.git/HEAD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, root, w := watched(t)
			mk(t, root, tc.setup)
			hidden, _, _, err := s.Journal().Watch(journal.Config{Path: "/", Recursive: true}) // default excludes
			must(t, err)
			settle(t, s, w, 0)
			cursor := s.Journal().Seq()
			tc.act(t, s, root)
			got := fmtEvents(settle(t, s, w, cursor))
			if got != tc.want {
				t.Errorf("events:\n%s\nwant:\n%s", got, tc.want)
			}
			b, _, err := hidden.Read(cursor, 0)
			must(t, err)
			if len(b.Events) != 0 {
				t.Errorf("a watcher with the default excludes saw:\n%s", fmtEvents(b.Events))
			}
			if !s.Watch().Covers(tc.covered) {
				t.Errorf("Covers(%s) = false, want true", tc.covered)
			}
		})
	}
}

// TestWatchCoversHoles: a directory whose watch is refused (the watch
// limit) leaves that subtree uncovered, and only it; once the directory is
// gone and made again (watched this time), it is covered again.
func TestWatchCoversHoles(t *testing.T) {
	s, root, w := watched(t)
	mk(t, root, map[string]string{"a/b/c/f": "1", "a/bc/": "", "x/": ""})
	settle(t, s, w, 0)
	s.watch.Refuse("/gone", unix.ENOENT) // vanished: no hole
	s.watch.Refuse("/a/b", unix.ENOSPC)  // as if its watch had been refused for lack of watches
	for p, want := range map[string]bool{
		"/": true, "/a": true, "/a/b": false, "/a/b/c": false, "/a/b/c/f": false,
		"/a/bc": true, "/x": true, "/gone": true,
	} {
		if got := s.Watch().Covers(p); got != want {
			t.Errorf("Covers(%s) = %v, want %v", p, got, want)
		}
	}
	if !s.Watch().Degraded() {
		t.Error("Watch().Degraded() = false after ENOSPC")
	}
	cursor := s.Journal().Seq()
	must(t, os.RemoveAll(filepath.Join(root, "a", "b")))
	settle(t, s, w, cursor)
	if s.watch.IsHole("/a/b") || !s.Watch().Covers("/a/b") {
		t.Error("the hole outlived its directory")
	}
	cursor = s.Journal().Seq()
	must(t, os.MkdirAll(filepath.Join(root, "a", "b", "c"), 0o755))
	if got := fmtEvents(settle(t, s, w, cursor)); got != "external create /a/b\nexternal create /a/b/c" {
		t.Errorf("events of the directory made again:\n%s", got)
	}
	if !s.Watch().Covers("/a/b/c/f") {
		t.Error("a directory made again is not covered")
	}
	cursor = s.Journal().Seq()
	must(t, os.WriteFile(filepath.Join(root, "a", "b", "c", "f"), nil, 0o644))
	if got := fmtEvents(settle(t, s, w, cursor)); got != "external create /a/b/c/f\nexternal write /a/b/c/f" && got != "external create /a/b/c/f" {
		t.Errorf("events in the directory made again:\n%s", got)
	}
}

// TestWatchDeeperThanPathMax: watches are placed through descriptors, so a
// directory whose host path is longer than PATH_MAX (its API path is not)
// is watched and covered like any other.
func TestWatchDeeperThanPathMax(t *testing.T) {
	s, root, w := watched(t)
	want := unix.PathMax - 8 // the API path's length: room for "/f"
	if len(root)+want <= unix.PathMax {
		t.Fatalf("the host root %s is too short to put a directory past PATH_MAX", root)
	}
	fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY, 0)
	must(t, err)
	ap := ""
	for len(ap) < want {
		comp := strings.Repeat("d", min(250, want-len(ap)-1))
		must(t, unix.Mkdirat(fd, comp, 0o755))
		next, err := unix.Openat(fd, comp, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
		must(t, err)
		unix.Close(fd)
		fd = next
		ap += "/" + comp
	}
	defer unix.Close(fd)
	settle(t, s, w, 0)
	if !s.Watch().Covers(ap + "/f") {
		t.Fatalf("a directory %d bytes below a host root of %d is not covered", len(ap), len(root))
	}
	cursor := s.Journal().Seq()
	dfd, err := unix.Openat(fd, ".", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	must(t, err)
	f, err := unix.Openat(dfd, "f", unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL|unix.O_CLOEXEC, 0o644)
	must(t, err)
	unix.Close(f)
	unix.Close(dfd)
	if got, want := fmtEvents(settle(t, s, w, cursor)), "external create "+ap+"/f"; got != want {
		t.Errorf("events:\n%.200s…\nwant:\n%.200s…", got, want)
	}
}

// afterCtimeOf waits until a change made now gets a ctime later than p's:
// the kernel stamps times from a coarse clock (a tick of a few
// milliseconds), so two changes a moment apart can share one.
func afterCtimeOf(t *testing.T, p string) {
	t.Helper()
	var ref, probe unix.Stat_t
	must(t, unix.Lstat(p, &ref))
	f := filepath.Join(t.TempDir(), "tick")
	for end := time.Now().Add(10 * time.Second); ; {
		must(t, os.WriteFile(f, nil, 0o644))
		must(t, unix.Lstat(f, &probe))
		if probe.Ctim.Nano() > ref.Ctim.Nano() {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("the clock did not pass %s's ctime in 10 s", p)
		}
		time.Sleep(time.Millisecond)
	}
}
