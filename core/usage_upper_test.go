package core

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/quota"
	"sandfs/internal/overlay"
	"sandfs/internal/testenv"
)

// TestUsageCountsUpper: with Options.Upper the scan counts the upper, not
// the root (whose 1 MiB would show), and weighs the overlay's bookkeeping
// as usage.go says; testenv.UpperUsage, which counts independently, finds
// the same.
func TestUsageCountsUpper(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "the upper's counting NOT TESTED: whiteouts and trusted.overlay xattrs need root")
	}
	xattr := func(p, name, v string) {
		if err := unix.Lsetxattr(p, name, []byte(v), 0); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		make func(upper string)
		want quota.Count
	}{
		{"empty: a fork just made", func(string) {}, quota.Count{}},
		{"a file written", func(u string) { testenv.Mk(t, u, map[string]string{"w": "written"}) }, quota.Count{Bytes: 7, Entries: 1}},
		{"a whiteout: nothing", func(u string) {
			must(t, unix.Mknod(filepath.Join(u, "gone"), unix.S_IFCHR|0, 0))
		}, quota.Count{}},
		{"another device: an entry", func(u string) {
			must(t, unix.Mknod(filepath.Join(u, "null"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))))
		}, quota.Count{Entries: 1}},
		{"a metacopy: an entry of no bytes", func(u string) {
			p := filepath.Join(u, "meta")
			must(t, os.WriteFile(p, nil, 0o600))
			must(t, os.Truncate(p, 5000))
			xattr(p, overlay.XattrMetacopy, "")
		}, quota.Count{Entries: 1}},
		{"a sparse file written: its size", func(u string) {
			p := filepath.Join(u, "sparse")
			must(t, os.WriteFile(p, nil, 0o600))
			must(t, os.Truncate(p, 5000))
		}, quota.Count{Bytes: 5000, Entries: 1}},
		{"an opaque directory and what it holds", func(u string) {
			testenv.Mk(t, u, map[string]string{"op/x": "0123456789"})
			xattr(filepath.Join(u, "op"), "trusted.overlay.opaque", "y")
		}, quota.Count{Bytes: 10, Entries: 2}},
		{"a copied-up directory with a whiteout in it", func(u string) {
			testenv.Mk(t, u, map[string]string{"d/": ""})
			must(t, unix.Mknod(filepath.Join(u, "d/gone"), unix.S_IFCHR|0, 0))
		}, quota.Count{Entries: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			root, upper := t.TempDir(), t.TempDir()
			testenv.Mk(t, root, map[string]string{"shared.bin": string(make([]byte, 1<<20))})
			c.make(upper)
			s, err := Open("fork", root, Options{Upper: func() (int, error) {
				return unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			}})
			must(t, err)
			defer s.Close()
			<-s.SweepDone()
			b, e, err := testenv.UpperUsage(upper)
			must(t, err)
			u := s.Quota().Usage()
			if got := (quota.Count{Bytes: u.Bytes, Entries: u.Entries}); got != c.want || b != c.want.Bytes || e != c.want.Entries {
				t.Errorf("usage %+v, UpperUsage %d bytes %d entries; want %+v", got, b, e, c.want)
			}
		})
	}
}

// TestForkWriteRescansOnCopyUpOnly: in a fork (a real overlay) a write by
// replace in a directory its upper holds copies nothing up, so its Op is
// exact and marks no rescan, and the counts already equal the upper's;
// a write whose directory is still the lower's alone copies it up and
// marks one. Either way the scan that follows finds what the counts say,
// whatever other processes did to the names between (upperMade's
// numbers stay true).
func TestForkWriteRescansOnCopyUpOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "a fork's write on a real overlay NOT TESTED: mounting one needs root")
	}
	lower, upper, work, mnt := t.TempDir(), t.TempDir(), t.TempDir(), t.TempDir()
	testenv.Mk(t, lower, map[string]string{"d/a": "lower a", "d/c": "lower c", "e/b": "lower b", "top": "lower top"})
	hold := func(p string) int {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		must(t, err)
		t.Cleanup(func() { unix.Close(fd) })
		return fd
	}
	if err := overlay.Mount(hold(mnt), overlay.Layers{Lower: []int{hold(lower)}, Upper: hold(upper), Work: hold(work)}); err != nil {
		testenv.Skip(t, nil, "a fork's write on a real overlay NOT TESTED: no overlay here: %v", err)
	}
	t.Cleanup(func() { unix.Unmount(mnt, unix.MNT_DETACH) })
	s, err := Open("fork", mnt, Options{Upper: func() (int, error) {
		return unix.Open(upper, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	}})
	must(t, err)
	defer s.Close()
	<-s.SweepDone()
	q := s.Quota()
	q.SetIntervals(quota.Intervals{Every: time.Hour, Soon: time.Hour}) // the test scans
	onMount := func(f func(p string) error, p string) func() {
		return func() { must(t, f(filepath.Join(mnt, p))) }
	}
	for _, c := range []struct {
		name, path, body string
		before           func() // a change not through the daemon
		rescan           bool
	}{
		{"a new file at the top", "/new", "0123456789", nil, false},
		{"a lower file at the top replaced", "/top", "upper top", nil, false},
		{"a lower file in a lower directory replaced", "/d/a", "upper a, longer", nil, true},
		{"the same file replaced again", "/d/a", "a", nil, false},
		{"another lower file of that directory", "/d/c", "upper c", nil, false},
		{"a new file in a lower directory", "/e/new", "new in e", nil, true},
		{"a file another process made", "/e/other", "now the daemon's",
			onMount(func(p string) error { return os.WriteFile(p, []byte("its own"), 0o644) }, "e/other"), false},
		{"a file the daemon wrote, linked twice", "/new", "one link less",
			onMount(func(p string) error { return os.Link(p, p+".link") }, "new"), true},
		{"a file the daemon wrote, removed and made again", "/d/a", "a again",
			onMount(func(p string) error {
				if err := os.Remove(p); err != nil {
					return err
				}
				return os.WriteFile(p, []byte("made by another process"), 0o644)
			}, "d/a"), false},
	} {
		if c.before != nil {
			c.before()
		}
		if _, err := q.Scan(t.Context()); err != nil || q.Dirty() {
			t.Fatalf("scan before %s: %v, dirty %v", c.name, err, q.Dirty())
		}
		if _, err := s.WriteFile(t.Context(), c.path, strings.NewReader(c.body), WriteOptions{}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if q.Dirty() != c.rescan {
			t.Errorf("%s: rescan marked %v, want %v", c.name, q.Dirty(), c.rescan)
		}
		b, e, err := testenv.UpperUsage(upper)
		must(t, err)
		u := q.Usage()
		if !c.rescan && (u.Bytes != b || u.Entries != e) {
			t.Errorf("%s: counts %d bytes %d entries, the upper holds %d bytes %d entries", c.name, u.Bytes, u.Entries, b, e)
		}
		if u, _ := q.Scan(t.Context()); u.Bytes != b || u.Entries != e {
			t.Errorf("%s: scan %d bytes %d entries, the upper holds %d bytes %d entries", c.name, u.Bytes, u.Entries, b, e)
		}
		if got, err := os.ReadFile(filepath.Join(mnt, c.path)); err != nil || string(got) != c.body {
			t.Errorf("%s: reads %q, %v", c.name, got, err)
		}
	}
}

// TestUpperMadeBound: a file written by replace over and over keeps one
// place in what a fork knows its upper made, so that knowledge outlasts
// any number of writes; at its bound it forgets all and learns again,
// never answering for a number it was not told.
func TestUpperMadeBound(t *testing.T) {
	var m upperMade
	file := func(ino uint64) *unix.Stat_t {
		return &unix.Stat_t{Ino: ino, Mode: unix.S_IFREG | 0o644, Nlink: 1, Size: 10}
	}
	ino := uint64(1)
	m.add(ino)
	for i := 0; i < 3*upperMadeMax; i++ {
		m.replace(ino, ino+1)
		ino++
	}
	if c, ok := m.count(file(ino)); !ok || c != (quota.Count{Entries: 1, Bytes: 10}) {
		t.Errorf("after %d rewrites: %+v, %v; want its 10 bytes and entry", 3*upperMadeMax, c, ok)
	}
	if _, ok := m.count(file(ino - 1)); ok {
		t.Error("the number of a file replaced is still known")
	}
	for i := uint64(1); i <= upperMadeMax; i++ {
		m.add(1<<40 + i)
	}
	if _, ok := m.count(file(ino)); ok {
		t.Error("at the bound nothing was forgotten")
	}
	if _, ok := m.count(file(1<<40 + upperMadeMax)); !ok {
		t.Error("the number learnt at the bound was lost")
	}
	links := file(1<<40 + upperMadeMax)
	links.Nlink = 2
	if _, ok := m.count(links); ok {
		t.Error("a file of two links answered from what is known")
	}
}
