package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestWatchCoversHoles: a directory whose watch is refused (the watch
// limit) leaves that subtree uncovered, and only it; once the directory is
// gone and made again (watched this time), it is covered again.
func TestWatchCoversHoles(t *testing.T) {
	s, root, w := watched(t)
	mk(t, root, map[string]string{"a/b/c/f": "1", "a/bc/": "", "x/": ""})
	settle(t, s, w, 0)
	n := s.ledger.reader.Load()
	n.mu.Lock()
	n.refused("/gone", unix.ENOENT) // vanished: no hole
	n.refused("/a/b", unix.ENOSPC)
	n.mu.Unlock()
	for p, want := range map[string]bool{
		"/": true, "/a": true, "/a/b": false, "/a/b/c": false, "/a/b/c/f": false,
		"/a/bc": true, "/x": true, "/gone": true,
	} {
		if got := s.WatchCovers(p); got != want {
			t.Errorf("WatchCovers(%s) = %v, want %v", p, got, want)
		}
	}
	if !s.WatchDegraded() {
		t.Error("WatchDegraded() = false after ENOSPC")
	}
	cursor := s.Journal().Seq()
	must(t, os.RemoveAll(filepath.Join(root, "a", "b")))
	settle(t, s, w, cursor)
	if !s.WatchCovers("/a/b/c") {
		t.Error("the hole outlived its directory")
	}
	cursor = s.Journal().Seq()
	must(t, os.MkdirAll(filepath.Join(root, "a", "b", "c"), 0o755))
	if got := fmtEvents(settle(t, s, w, cursor)); got != "external create /a/b\nexternal create /a/b/c" {
		t.Errorf("events of the directory made again:\n%s", got)
	}
	if !s.WatchCovers("/a/b/c/f") {
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
		t.Skipf("the host root %s is too short", root)
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
	if !s.WatchCovers(ap + "/f") {
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
