package integration

import (
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// The mirror acts through held directory descriptors (core/dir.go,
// fusefs/doc.go): a file at any depth works through the mount as on the
// root, and a directory an outside process moves out of the root is cut
// off once the journal tells the move.

func init() {
	posixSuite["depth past PATH_MAX"] = syscallCase(testDeepPaths)
}

// deepName is one component of the deep chain: 200 bytes, so 24 of them
// make a path past PATH_MAX (4096) below any test directory.
var deepName = strings.Repeat("d", 200)

const deepLevels = 24

// testDeepPaths makes a chain of directories whose path is longer than
// PATH_MAX, one name at a time through descriptors (no path that long can
// be passed to a syscall), and at the bottom runs every kind of operation
// a process makes on ordinary files; then it takes the chain down again.
func testDeepPaths(t *testing.T, dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	fds := []int{fd}
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for i := 0; i < deepLevels; i++ {
		top := fds[len(fds)-1]
		must(t, unix.Mkdirat(top, deepName, 0o755))
		next, err := unix.Openat(top, deepName, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		must(t, err)
		fds = append(fds, next)
	}
	if got := len(dir) + deepLevels*(len(deepName)+1); got <= unix.PathMax {
		t.Fatalf("chain is only %d bytes long", got)
	}
	bottom := fds[len(fds)-1]

	// create, write, read back
	f, err := unix.Openat(bottom, "f", unix.O_CREAT|unix.O_EXCL|unix.O_WRONLY|unix.O_CLOEXEC, 0o640)
	must(t, err)
	_, err = unix.Write(f, []byte("deep"))
	must(t, err)
	must(t, unix.Close(f))
	f, err = unix.Openat(bottom, "f", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	must(t, err)
	buf := make([]byte, 16)
	n, err := unix.Read(f, buf)
	must(t, err)
	unix.Close(f)
	if string(buf[:n]) != "deep" {
		t.Errorf("read back %q, want %q", buf[:n], "deep")
	}
	var st unix.Stat_t
	must(t, unix.Fstatat(bottom, "f", &st, unix.AT_SYMLINK_NOFOLLOW))
	if st.Size != 4 || st.Mode&0o777 != 0o640&^uint32(umask()) {
		t.Errorf("stat: size %d mode %o, want 4 and %o", st.Size, st.Mode&0o777, 0o640&^uint32(umask()))
	}
	// chmod, truncate, times
	must(t, unix.Fchmodat(bottom, "f", 0o600, 0))
	must(t, unix.UtimesNanoAt(bottom, "f", []unix.Timespec{{Sec: 1e9}, {Sec: 1e9}}, unix.AT_SYMLINK_NOFOLLOW))
	f, err = unix.Openat(bottom, "f", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	must(t, err)
	must(t, unix.Ftruncate(f, 2))
	unix.Close(f)
	must(t, unix.Fstatat(bottom, "f", &st, unix.AT_SYMLINK_NOFOLLOW))
	if st.Size != 2 || st.Mode&0o777 != 0o600 {
		t.Errorf("after chmod and truncate: size %d mode %o, want 2 and 600", st.Size, st.Mode&0o777)
	}
	// link, symlink, readlink, rename, mkdir, mknod
	must(t, unix.Linkat(bottom, "f", bottom, "hard", 0))
	must(t, unix.Symlinkat("f", bottom, "sym"))
	target := make([]byte, 16)
	n, err = unix.Readlinkat(bottom, "sym", target)
	must(t, err)
	if string(target[:n]) != "f" {
		t.Errorf("readlink %q, want f", target[:n])
	}
	must(t, unix.Renameat(bottom, "hard", bottom, "moved"))
	must(t, unix.Fstatat(bottom, "moved", &st, unix.AT_SYMLINK_NOFOLLOW))
	if st.Nlink != 2 {
		t.Errorf("link count %d, want 2", st.Nlink)
	}
	must(t, unix.Mkdirat(bottom, "sub", 0o700))
	must(t, unix.Mknodat(bottom, "fifo", unix.S_IFIFO|0o600, 0))
	// a rename between two deep directories
	must(t, unix.Renameat(bottom, "moved", fds[len(fds)-2], "up"))
	must(t, unix.Unlinkat(fds[len(fds)-2], "up", 0))
	// a listing
	df, err := unix.Openat(bottom, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	d := os.NewFile(uintptr(df), "bottom")
	names, err := d.Readdirnames(-1)
	d.Close()
	must(t, err)
	sort.Strings(names)
	if strings.Join(names, " ") != "f fifo sub sym" {
		t.Errorf("listing %q, want f fifo sub sym", names)
	}
	// take it down
	for _, name := range []string{"f", "sym", "fifo"} {
		must(t, unix.Unlinkat(bottom, name, 0))
	}
	must(t, unix.Unlinkat(bottom, "sub", unix.AT_REMOVEDIR))
	for i := len(fds) - 2; i >= 0; i-- {
		must(t, unix.Unlinkat(fds[i], deepName, unix.AT_REMOVEDIR))
	}
}

// TestFUSEMovedOut: a directory held open through the mount (a process's
// descriptor on it, as a shell's working directory is) keeps working while
// it is in the root; once an outside process moves it out and the journal
// tells the move, calls through that descriptor fail, nothing lands
// outside the root, and no event names a path beneath the moved
// directory.
func TestFUSEMovedOut(t *testing.T) {
	for _, mode := range fuseModes {
		t.Run(mode.name, func(t *testing.T) {
			d, mnt := startMirror(t, append([]string{"--log-events"}, mode.args...)...)
			must(t, os.MkdirAll(filepath.Join(mnt, "a", "held", "deeper"), 0o755))
			fd, err := unix.Open(filepath.Join(mnt, "a", "held"), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			must(t, err)
			defer unix.Close(fd)
			// While inside, it works (and its descriptor is held).
			f, err := unix.Openat(fd, "before", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
			must(t, err)
			unix.Close(f)
			if _, err := os.Stat(filepath.Join(d.Root, "a", "held", "before")); err != nil {
				t.Fatalf("a file made through the held directory is not in the root: %v", err)
			}
			deeper, err := unix.Openat(fd, "deeper", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			must(t, err)
			defer unix.Close(deeper)

			outside := filepath.Join(filepath.Dir(d.Root), "outside-"+mode.name)
			must(t, os.Mkdir(outside, 0o755))
			t.Cleanup(func() { os.RemoveAll(outside) })
			must(t, os.Rename(filepath.Join(d.Root, "a", "held"), filepath.Join(outside, "held")))
			told := waitEvent(t, d, func(e logEvent) bool { return e["type"] == "remove" && e["path"] == "/a/held" })
			seen := len(told)

			// Every kind of call through either descriptor now fails.
			calls := []struct {
				name string
				call func(dirfd int) error
			}{
				{"create", func(dirfd int) error {
					f, err := unix.Openat(dirfd, "after", unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o644)
					if err == nil {
						unix.Close(f)
					}
					return err
				}},
				{"mkdir", func(dirfd int) error { return unix.Mkdirat(dirfd, "afterdir", 0o755) }},
				{"symlink", func(dirfd int) error { return unix.Symlinkat("x", dirfd, "afterlink") }},
				{"mknod", func(dirfd int) error { return unix.Mknodat(dirfd, "afterfifo", unix.S_IFIFO|0o644, 0) }},
				{"stat", func(dirfd int) error {
					var st unix.Stat_t
					return unix.Fstatat(dirfd, "before", &st, unix.AT_SYMLINK_NOFOLLOW)
				}},
				{"unlink", func(dirfd int) error { return unix.Unlinkat(dirfd, "before", 0) }},
				{"chmod", func(dirfd int) error { return unix.Fchmodat(dirfd, "before", 0o600, 0) }},
			}
			for _, c := range calls {
				for _, h := range []struct {
					name string
					fd   int
				}{{"held", fd}, {"deeper", deeper}} {
					if err := c.call(h.fd); err == nil {
						t.Errorf("%s through %s after the move was told: succeeded", c.name, h.name)
					} else if !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ESTALE) {
						t.Errorf("%s through %s after the move: %v, want ENOENT", c.name, h.name, err)
					}
				}
			}
			for _, dir := range []string{filepath.Join(outside, "held"), filepath.Join(outside, "held", "deeper")} {
				ents, err := os.ReadDir(dir)
				must(t, err)
				for _, e := range ents {
					if e.Name() != "before" && e.Name() != "deeper" {
						t.Errorf("%s landed outside the root, in %s", e.Name(), dir)
					}
				}
			}
			if fi, err := os.Stat(filepath.Join(outside, "held", "before")); err != nil || fi.Mode().Perm() != 0o644 {
				t.Errorf("the outside file was changed: %v %v", fi, err)
			}
			// A file made in the root after the calls is the marker: every
			// event the calls could have made is told before it.
			must(t, os.WriteFile(filepath.Join(mnt, "marker"), nil, 0o644))
			evs := waitEvent(t, d, func(e logEvent) bool { return e["path"] == "/marker" })
			for _, e := range evs[seen:] {
				if strings.HasPrefix(e["path"], "/a/held") {
					t.Errorf("an event names a path beneath the moved directory: %v", e)
				}
			}
		})
	}
}
