package core

import (
	"os"
	"path/filepath"
	"testing"

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
