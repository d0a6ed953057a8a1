package watch

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestSweepControlDirs: the sweep removes a control directory left by a
// daemon gone (ours, old, unlocked, files only) and nothing else: not one a
// live daemon holds locked, not one just made, not a symlink of that name
// (nor what it points at), not one with a directory inside, not another
// name, and none at all when they are not its uid's.
func TestSweepControlDirs(t *testing.T) {
	parent := t.TempDir()
	elsewhere := t.TempDir()
	old := time.Now().Add(-time.Hour)
	mkCtl := func(name string, files ...string) string {
		d := filepath.Join(parent, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(d, f), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chtimes(d, old, old); err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, tc := range []struct {
		name string
		make func(name string)
		gone bool
	}{
		{"sandfs-ctl-stale", func(n string) { mkCtl(n, "0", "1", "2") }, true},
		{"sandfs-ctl-empty", func(n string) { mkCtl(n) }, true},
		{"sandfs-ctl-live", func(n string) {
			fd, err := unix.Open(mkCtl(n, "0"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { unix.Close(fd) })
			if err := lockCtlDir(fd); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"sandfs-ctl-new", func(n string) {
			d := mkCtl(n, "0")
			if err := os.Chtimes(d, time.Now(), time.Now()); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"sandfs-ctl-link", func(n string) {
			if err := os.WriteFile(filepath.Join(elsewhere, "keep"), nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, filepath.Join(parent, n)); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"sandfs-ctl-nested", func(n string) {
			d := mkCtl(n, "0")
			if err := os.Mkdir(filepath.Join(d, "sub"), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.Chtimes(d, old, old); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"other-stale", func(n string) { mkCtl(n, "0") }, false},
	} {
		tc.make(tc.name)
	}
	uid := uint32(os.Geteuid())
	if n := sweepControlDirs(parent, time.Minute, uid+1, time.Now()); n != 0 {
		t.Errorf("a sweep for another uid removed %d directories, want 0", n)
	}
	if n := sweepControlDirs(parent, time.Minute, uid, time.Now()); n != 2 {
		t.Errorf("the sweep removed %d directories, want 2", n)
	}
	ents, _ := os.ReadDir(parent)
	var left []string
	for _, e := range ents {
		left = append(left, e.Name())
	}
	sort.Strings(left)
	want := "other-stale sandfs-ctl-link sandfs-ctl-live sandfs-ctl-nested sandfs-ctl-new"
	if got := strings.Join(left, " "); got != want {
		t.Errorf("left: %s\nwant: %s", got, want)
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "keep")); err != nil {
		t.Errorf("the symlink's target lost its file: %v", err)
	}
	for _, d := range []string{"sandfs-ctl-live", "sandfs-ctl-nested"} {
		if _, err := os.Stat(filepath.Join(parent, d, "0")); err != nil {
			t.Errorf("%s lost its slot: %v", d, err)
		}
	}
}

// TestControlDirLocked: a kernel watch holds its control directory locked
// (so no other daemon's sweep takes it) until it stops, and then removes
// it.
func TestControlDirLocked(t *testing.T) {
	w, _, stop := started(t)
	dir := w.ledger.dir()
	if !strings.HasPrefix(filepath.Base(dir), ctlPrefix) {
		t.Fatalf("control directory %q", dir)
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	err = lockCtlDir(fd)
	unix.Close(fd)
	if err != unix.EWOULDBLOCK {
		t.Errorf("locking a live control directory: %v, want EWOULDBLOCK", err)
	}
	stop()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(dir); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the control directory outlived its watch")
		}
	}
}
