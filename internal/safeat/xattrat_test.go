package safeat

import (
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestXattrAt: the at-calls read what the /proc/self/fd form reads, for a
// file, for the directory itself ("") and for a symlink, which is read
// itself, never its target; a name with a "/" is refused; a short buffer
// is ERANGE and an empty one asks the size.
func TestXattrAt(t *testing.T) {
	dir, dirfd := setup(t)
	if err := unix.Setxattr(filepath.Join(dir, "target"), "user.k", []byte("value"), 0); err != nil {
		testenv.Skip(t, nil, "user xattrs not supported here: %v", err)
	}
	if err := unix.Setxattr(dir, "user.d", []byte("dv"), 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := GetxattrAt(dirfd, "target", "user.k", nil); !ok {
		testenv.Skip(t, nil, "the kernel has no getxattrat(2) (Linux 6.13): the descriptor form serves")
	}
	for _, tc := range []struct {
		name, attr string
		size       int
		want       string
		err        error
	}{
		{"target", "user.k", 64, "value", nil},
		{"target", "user.k", 0, "", nil}, // the size: 5
		{"target", "user.k", 2, "", unix.ERANGE},
		{"target", "user.none", 64, "", unix.ENODATA},
		{"", "user.d", 64, "dv", nil},
		{"link", "user.k", 64, "", unix.ENODATA}, // the link's own, not the target's
		{"missing", "user.k", 64, "", unix.ENOENT},
		{"a/target", "user.k", 64, "", unix.EINVAL},
	} {
		buf := make([]byte, tc.size)
		n, ok, err := GetxattrAt(dirfd, tc.name, tc.attr, buf)
		if !ok || err != tc.err {
			t.Errorf("GetxattrAt(%q, %q): ok %v err %v, want %v", tc.name, tc.attr, ok, err, tc.err)
			continue
		}
		if err != nil {
			continue
		}
		if tc.size == 0 && n != 5 {
			t.Errorf("size of %q %q: %d, want 5", tc.name, tc.attr, n)
		} else if tc.size > 0 && string(buf[:n]) != tc.want {
			t.Errorf("GetxattrAt(%q, %q) = %q, want %q", tc.name, tc.attr, buf[:n], tc.want)
		}
	}

	buf := make([]byte, 256)
	n, ok, err := ListxattrAt(dirfd, "target", buf)
	if !ok || err != nil {
		t.Fatalf("ListxattrAt: ok %v err %v", ok, err)
	}
	fd, err := unix.Openat(dirfd, "target", unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	old := make([]byte, 256)
	m, err := Listxattr(fd, old)
	if err != nil || string(buf[:n]) != string(old[:m]) {
		t.Errorf("ListxattrAt = %q, the descriptor form %q (%v)", buf[:n], old[:m], err)
	}
	if n, _, err := ListxattrAt(dirfd, "target", nil); err != nil || n != m {
		t.Errorf("ListxattrAt size: %d %v, want %d", n, err, m)
	}
}

// BenchmarkGetxattr: the mirror's read of a missing security.capability,
// through an O_PATH descriptor and /proc/self/fd (open, getxattr, close)
// against getxattrat(2).
func BenchmarkGetxattr(b *testing.B) {
	dir := b.TempDir()
	if err := unix.Mknod(filepath.Join(dir, "f"), unix.S_IFREG|0o644, 0); err != nil {
		b.Fatal(err)
	}
	dirfd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer unix.Close(dirfd)
	buf := make([]byte, 64)
	b.Run("procfd", func(b *testing.B) {
		for b.Loop() {
			fd, err := unix.Openat(dirfd, "f", unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			if err != nil {
				b.Fatal(err)
			}
			Getxattr(fd, "security.capability", buf)
			unix.Close(fd)
		}
	})
	b.Run("getxattrat", func(b *testing.B) {
		for b.Loop() {
			if _, ok, _ := GetxattrAt(dirfd, "f", "security.capability", buf); !ok {
				testenv.Skip(b, nil, "no getxattrat(2)")
			}
		}
	})
}
