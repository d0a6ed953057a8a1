package history

import (
	"io/fs"
	"strings"
	"testing"
	"time"

	"sandfs/core/journal"
)

func TestDropMoveTree(t *testing.T) {
	m := map[string]Entry{"/a": {IsDir: true}, "/a/x": {}, "/a/y/z": {}, "/ab": {}, "/b": {}, "/b/old": {}}
	MoveTree(m, "/a", "/b")
	want := []string{"/ab", "/b/x", "/b/y/z"} // /b itself is the caller's to enter
	if len(m) != len(want) {
		t.Fatalf("after MoveTree: %v, want %v", m, want)
	}
	for _, p := range want {
		if _, ok := m[p]; !ok {
			t.Errorf("after MoveTree: %s missing from %v", p, m)
		}
	}
	DropTree(m, "/b")
	if len(m) != 1 || !func() bool { _, ok := m["/ab"]; return ok }() {
		t.Errorf("after DropTree: %v, want only /ab", m)
	}
}

func TestDiffManifest(t *testing.T) {
	t0 := time.Unix(1000, 0)
	known := map[string]Entry{
		"/gone":          {Inode: 1, Mode: 0o644},
		"/gone/deeper":   {Inode: 2, Mode: 0o644},
		"/same":          {Inode: 3, Size: 1, Mtime: t0, Mode: 0o644},
		"/grown":         {Inode: 4, Size: 1, Mtime: t0, Mode: 0o644},
		"/moved":         {Inode: 5, Size: 1, Mtime: t0, Mode: 0o644},
		"/chmod":         {Inode: 6, Size: 1, Mtime: t0, Mode: 0o644},
		"/heard":         {Inode: 7, Mode: 0o644},
		"/.tmp":          {Inode: 8, Mode: 0o644},
		"/bad\xff":       {Inode: 9, Mode: 0o644},
		"/dir-to-file":   {Inode: 10, Mode: fs.ModeDir | 0o755, IsDir: true},
		"/unknown-stats": {},
	}
	now := map[string]Entry{
		"/same":          {Inode: 3, Size: 1, Mtime: t0, Mode: 0o644},
		"/grown":         {Inode: 4, Size: 2, Mtime: t0, Mode: 0o644},
		"/moved":         {Inode: 50, Size: 1, Mtime: t0, Mode: 0o644},
		"/chmod":         {Inode: 6, Size: 1, Mtime: t0, Mode: 0o600},
		"/new":           {Inode: 11, Mode: fs.ModeDir | 0o755, IsDir: true},
		"/new/f":         {Inode: 12, Mode: 0o644},
		"/dir-to-file":   {Inode: 13, Mode: 0o644},
		"/unknown-stats": {Inode: 14, Size: 9, Mtime: t0, Mode: 0o644},
	}
	heard := map[string]bool{"/heard": true}
	skip := func(p string) bool { return strings.HasPrefix(p, "/.tmp") }
	str := func(evs []journal.Event) string {
		var b []string
		for _, e := range evs {
			if e.Origin != journal.External || !e.FoundAtStart {
				t.Errorf("%v: want origin external, found at start", e)
			}
			b = append(b, string(e.Type)+" "+e.Path)
		}
		return strings.Join(b, ", ")
	}
	want := "remove /gone/deeper, remove /gone, remove /dir-to-file, create /dir-to-file, create /new, create /new/f, " +
		"chmod /chmod, write /grown, write /moved"
	if got := str(DiffManifest(known, now, heard, true, skip)); got != want {
		t.Errorf("same root:\n got %s\nwant %s", got, want)
	}
	// On a copy of the root every inode is new: /moved is not a change.
	want = strings.Replace(want, ", write /moved", "", 1)
	if got := str(DiffManifest(known, now, heard, false, skip)); got != want {
		t.Errorf("a copy:\n got %s\nwant %s", got, want)
	}
}
