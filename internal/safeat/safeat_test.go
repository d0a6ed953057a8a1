package safeat

import (
	"os"
	"path/filepath"
	"sandfs/internal/testenv"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// setup makes dir/target (0600) and dir/link -> target, and returns an
// O_PATH descriptor of dir.
func setup(t *testing.T) (dir string, dirfd int) {
	t.Helper()
	dir = t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "target"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("target", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return dir, fd
}

func mode(t *testing.T, p string) uint32 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Mode & 0o7777
}

// TestChmodNeverFollows runs with fchmodat2 and with its fallback.
func TestChmodNeverFollows(t *testing.T) {
	for _, fallback := range []bool{false, true} {
		name := map[bool]string{false: "fchmodat2", true: "fallback"}[fallback]
		t.Run(name, func(t *testing.T) {
			noFchmodat2.Store(fallback)
			defer noFchmodat2.Store(false)
			dir, dfd := setup(t)
			if err := ChmodAt(dfd, "link", 0o777); err != unix.EOPNOTSUPP {
				t.Errorf("ChmodAt on a symlink: got %v, want EOPNOTSUPP", err)
			}
			if m := mode(t, filepath.Join(dir, "target")); m != 0o600 {
				t.Errorf("target mode %o after ChmodAt of the link, want 600", m)
			}
			if err := ChmodAt(dfd, "target", 0o640); err != nil {
				t.Fatal(err)
			}
			if m := mode(t, filepath.Join(dir, "target")); m != 0o640 {
				t.Errorf("target mode %o, want 640", m)
			}
			for _, bad := range []string{"", ".", "..", "x/target"} {
				if err := ChmodAt(dfd, bad, 0o777); err != unix.EINVAL {
					t.Errorf("ChmodAt(%q): got %v, want EINVAL", bad, err)
				}
			}
			// An O_PATH descriptor of the file, then the name swapped for a
			// symlink: Chmod acts on the inode held.
			fd, err := unix.Openat(dfd, "target", unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unix.Close(fd)
			os.Rename(filepath.Join(dir, "target"), filepath.Join(dir, "moved"))
			os.WriteFile(filepath.Join(dir, "other"), nil, 0o600)
			os.Symlink("other", filepath.Join(dir, "target"))
			if err := Chmod(fd, 0o604); err != nil {
				t.Fatal(err)
			}
			if m := mode(t, filepath.Join(dir, "moved")); m != 0o604 {
				t.Errorf("held inode mode %o, want 604", m)
			}
			if m := mode(t, filepath.Join(dir, "other")); m != 0o600 {
				t.Errorf("the symlink's target changed to %o", m)
			}
		})
	}
}

func TestLchownAndLutimesChangeTheLink(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "chown needs root")
	}
	dir, dfd := setup(t)
	if err := LchownAt(dfd, "link", 65534, 65534); err != nil {
		t.Fatal(err)
	}
	ts := []unix.Timespec{{Sec: 1000}, {Sec: 1000}}
	if err := LutimesAt(dfd, "link", ts); err != nil {
		t.Fatal(err)
	}
	var st unix.Stat_t
	unix.Stat(filepath.Join(dir, "target"), &st)
	if st.Uid != 0 || st.Mtim.Sec == 1000 {
		t.Errorf("target changed: uid %d mtime %d", st.Uid, st.Mtim.Sec)
	}
	unix.Lstat(filepath.Join(dir, "link"), &st)
	if st.Uid != 65534 || st.Mtim.Sec != 1000 {
		t.Errorf("link: uid %d mtime %d, want 65534 and 1000", st.Uid, st.Mtim.Sec)
	}
}

// TestXattrValueGrows: XattrValue reads a value larger than its first
// buffer (1 KiB) whole, 3,000 bytes (ext4 keeps a value within one block),
// and XattrNames lists it; a missing attribute is a bare ENODATA.
func TestXattrValueGrows(t *testing.T) {
	dir, dirfd := setup(t)
	defer unix.Close(dirfd)
	p := filepath.Join(dir, "target")
	want := make([]byte, 3000)
	for i := range want {
		want[i] = byte(i)
	}
	if err := unix.Setxattr(p, "user.big", want, 0); err != nil {
		testenv.Skip(t, nil, "no user xattrs of 3,000 bytes on this filesystem: %v", err)
	}
	fd, err := unix.Open(p, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	got, err := XattrValue(fd, "user.big")
	if err != nil || string(got) != string(want) {
		t.Fatalf("XattrValue: %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	names, err := XattrNames(fd)
	if err != nil || !slices.Contains(names, "user.big") {
		t.Fatalf("XattrNames: %q %v", names, err)
	}
	if _, err := XattrValue(fd, "user.missing"); err != unix.ENODATA {
		t.Fatalf("missing: %v, want a bare ENODATA", err)
	}
}

// TestXattrValueLongName: a name past XATTR_NAME_MAX is the kernel's ERANGE,
// at once, not a buffer grown until EOVERFLOW (which the API told as a 500).
func TestXattrValueLongName(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "f"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := XattrValue(int(f.Fd()), "user."+strings.Repeat("n", 300)); err != unix.ERANGE {
		t.Fatalf("got %v, want ERANGE", err)
	}
}
