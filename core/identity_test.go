package core

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/statedir"
	"sandfs/internal/testenv"
)

// durableLog is durable with the sandbox's log kept.
func durableLog(t *testing.T, root, state string) (*Sandbox, *testenv.Buffer, func()) {
	t.Helper()
	s, err := Open("default", root, Options{StateDir: state})
	if err != nil {
		t.Fatal(err)
	}
	buf := &testenv.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	if err := s.StartWatching(ctx, slog.New(slog.NewTextHandler(buf, nil))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.Reconciled():
	case <-time.After(60 * time.Second):
		t.Fatalf("the comparison at start did not end:\n%s", buf)
	}
	return s, buf, func() {
		cancel()
		time.Sleep(20 * time.Millisecond) // the reader's last flush
		s.Close()
	}
}

func markOf(t *testing.T, dir string) string {
	t.Helper()
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	m, err := RootMark(fd)
	if err != nil {
		t.Fatalf("reading the mark of %s: %v", dir, err)
	}
	return m
}

// needMark skips unless the daemon may read and write trusted xattrs
// (root, on a filesystem that has them).
func needMark(t *testing.T, dir string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "the root's mark is a trusted.* xattr: the test must run as root")
	}
	if err := unix.Lsetxattr(dir, "trusted.sandfs.probe", []byte("x"), 0); err != nil {
		testenv.Skip(t, nil, "trusted xattrs on %s: %v", dir, err)
	}
	unix.Lremovexattr(dir, "trusted.sandfs.probe")
}

// A root copied with its xattrs to another filesystem (every device and
// inode new) is still the sandbox's: the changes made to the copy while
// no daemon served it are told, exactly those; a root that is not marked
// with the sandbox's identity (a fresh directory, one with a user.* xattr
// of the same name and value, one marked by another sandbox) is another
// directory and is not compared.
func TestIdentityTravelsWithRoot(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	needMark(t, root)
	mk(t, root, map[string]string{"keep.txt": "same", "edit.txt": "old", "gone.txt": "x", "dir/": "", "dir/f": "1", "mode.sh": "#!"})
	s, _, stop := durableLog(t, root, state)
	id := s.Identity()
	if !statedir.IsIdentity(id) {
		t.Fatalf("identity %q", id)
	}
	if m := markOf(t, root); m != id {
		t.Fatalf("the root's mark is %q, want the identity %q", m, id)
	}
	seq := s.Journal().Seq()
	stop()
	if b, err := os.ReadFile(filepath.Join(state, statedir.IdentityFile)); err != nil || strings.TrimSpace(string(b)) != id {
		t.Fatalf("identity file: %q %v, want %s", b, err, id)
	}

	copyState := func(t *testing.T) string {
		dst := t.TempDir()
		if out, err := exec.Command("cp", "-a", state+"/.", dst).CombinedOutput(); err != nil {
			t.Fatalf("cp -a state: %v\n%s", err, out)
		}
		return dst
	}
	t.Run("copy on another filesystem", func(t *testing.T) {
		copyRoot := filepath.Join(testenv.Tmpfs(t, "size=16m"), "root")
		if out, err := exec.Command("cp", "-a", root, copyRoot).CombinedOutput(); err != nil {
			t.Fatalf("cp -a: %v\n%s", err, out)
		}
		st := copyState(t)
		must(t, os.WriteFile(filepath.Join(copyRoot, "edit.txt"), []byte("new and longer"), 0o644))
		must(t, os.WriteFile(filepath.Join(copyRoot, "new.txt"), []byte("n"), 0o644))
		must(t, os.Remove(filepath.Join(copyRoot, "gone.txt")))
		must(t, os.Chmod(filepath.Join(copyRoot, "mode.sh"), 0o755))
		s, log, stop := durableLog(t, copyRoot, st)
		defer stop()
		got := eventsAfter(t, s, seq)
		sort.Strings(got)
		want := []string{
			"chmod /mode.sh external found",
			"create /new.txt external found",
			"remove /gone.txt external found",
			"write /edit.txt external found",
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("found at start:\n%s\nwant:\n%s\nlog:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), log)
		}
		if strings.Contains(log.String(), "another directory") {
			t.Errorf("the copy was taken for another directory:\n%s", log)
		}
		if s.Identity() != id || markOf(t, copyRoot) != id {
			t.Errorf("identity %q, mark %q, want %s", s.Identity(), markOf(t, copyRoot), id)
		}
	})

	other := func(t *testing.T, prepare func(dir string)) {
		dir := t.TempDir()
		mk(t, dir, map[string]string{"keep.txt": "same", "made.txt": "m"})
		prepare(dir)
		s, log, stop := durableLog(t, dir, copyState(t))
		defer stop()
		if got := eventsAfter(t, s, seq); len(got) != 0 {
			t.Errorf("another directory was compared: %v", got)
		}
		if !strings.Contains(log.String(), "another directory") {
			t.Errorf("the log does not say another directory:\n%s", log)
		}
		if markOf(t, dir) != id {
			t.Errorf("the root served is not marked with the sandbox's identity")
		}
	}
	t.Run("no mark", func(t *testing.T) { other(t, func(string) {}) })
	t.Run("user xattr", func(t *testing.T) {
		other(t, func(dir string) {
			if err := unix.Lsetxattr(dir, "user.sandfs.id", []byte(id), 0); err != nil {
				testenv.Skip(t, nil, "user xattrs: %v", err)
			}
		})
	})
	t.Run("another sandbox's mark", func(t *testing.T) {
		other(t, func(dir string) {
			fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
			must(t, err)
			defer unix.Close(fd)
			must(t, MarkRoot(fd, strings.Repeat("ab", 32)))
		})
	})
}

// The mark is the daemon's: not listed or read through the API, not set
// or removed by it, not copied by Copy, and not a change.
func TestMarkHidden(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	needMark(t, root)
	mk(t, root, map[string]string{"d/": ""})
	s, _, stop := durableLog(t, root, state)
	defer stop()
	ctx := context.Background()
	if got := eventsAfter(t, s, 0); len(got) != 0 {
		t.Errorf("events at the first start: %v", got)
	}
	_, xs, err := s.Xattrs(ctx, "/", "")
	must(t, err)
	if _, ok := xs[MarkXattr]; ok {
		t.Errorf("the mark is listed: %v", xs)
	}
	if _, _, err := s.Xattrs(ctx, "/", MarkXattr); !errors.Is(err, unix.ENODATA) {
		t.Errorf("reading the mark: %v, want ENODATA", err)
	}
	for name, call := range map[string]func() error{
		"set":    func() error { _, err := s.SetXattr(ctx, "/", MarkXattr, []byte(strings.Repeat("cd", 32))); return err },
		"remove": func() error { _, err := s.RemoveXattr(ctx, "/", MarkXattr); return err },
		"set on a dir": func() error {
			_, err := s.SetXattr(ctx, "/d", MarkXattr, []byte(s.Identity()))
			return err
		},
		"mirror set":    func() error { return s.RootDir().Setxattr(ctx, "", MarkXattr, []byte("x"), 0) },
		"mirror remove": func() error { return s.RootDir().Removexattr(ctx, "", MarkXattr) },
	} {
		if err := call(); !errors.Is(err, fs.ErrPermission) {
			t.Errorf("%s: %v, want EPERM", name, err)
		}
	}
	if m := markOf(t, root); m != s.Identity() {
		t.Errorf("mark %q after the refusals, want %s", m, s.Identity())
	}
	buf := make([]byte, 4096)
	n, err := s.RootDir().Listxattr("", buf)
	must(t, err)
	if strings.Contains(string(buf[:n]), MarkXattr) {
		t.Errorf("the mirror lists the mark: %q", buf[:n])
	}
	if _, err := s.RootDir().Getxattr("", MarkXattr, buf); !errors.Is(err, unix.ENODATA) {
		t.Errorf("the mirror reads the mark: %v", err)
	}
	must(t, unix.Lsetxattr(filepath.Join(root, "d"), MarkXattr, []byte(s.Identity()), 0)) // as a copied root's would be
	if _, err := s.Copy(ctx, "/d", "/copy", CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if m := markOf(t, filepath.Join(root, "copy")); m != "" {
		t.Errorf("a copy of a marked directory carries the mark %q", m)
	}
}

// dropReserved takes the mark out of a list of names, wherever it is.
func TestDropReserved(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"", ""},
		{"user.a\x00", "user.a\x00"},
		{MarkXattr + "\x00", ""},
		{"user.a\x00" + MarkXattr + "\x00user.b\x00", "user.a\x00user.b\x00"},
		{MarkXattr + "\x00user.b\x00", "user.b\x00"},
		{"user.a\x00" + MarkXattr + "x\x00", "user.a\x00" + MarkXattr + "x\x00"},
	} {
		buf := make([]byte, len(tc.in)+8)
		n := copy(buf, tc.in)
		got, err := dropReserved(buf, n, nil)
		if err != nil || string(buf[:got]) != tc.want {
			t.Errorf("dropReserved(%q) = %q, %v; want %q", tc.in, buf[:got], err, tc.want)
		}
	}
}

// RootMark reads only what has an identity's form; MarkRoot refuses what
// has not, and a file.
func TestMarkRoot(t *testing.T) {
	dir := t.TempDir()
	needMark(t, dir)
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(fd)
	if m, err := RootMark(fd); m != "" || err != nil {
		t.Fatalf("unmarked: %q %v", m, err)
	}
	must(t, unix.Lsetxattr(dir, MarkXattr, []byte("not an identity"), 0))
	if m, err := RootMark(fd); m != "" || err != nil {
		t.Fatalf("a malformed mark: %q %v", m, err)
	}
	if err := MarkRoot(fd, "nope"); !errors.Is(err, unix.EINVAL) {
		t.Fatalf("MarkRoot(nope): %v", err)
	}
	id := strings.Repeat("0f", 32)
	must(t, MarkRoot(fd, id))
	if m, err := RootMark(fd); m != id || err != nil {
		t.Fatalf("marked: %q %v", m, err)
	}
	must(t, os.WriteFile(filepath.Join(dir, "f"), nil, 0o644))
	ffd, err := unix.Open(filepath.Join(dir, "f"), unix.O_PATH|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(ffd)
	if err := MarkRoot(ffd, id); !errors.Is(err, unix.ENOTDIR) {
		t.Fatalf("MarkRoot on a file: %v", err)
	}
}
