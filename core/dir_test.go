package core

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/core/journal"
)

// childDir is the Dir of name in parent, opened from it as the mirror opens
// one (fusefs/tree.go): by its one name, checked to be the inode it stands
// for (ino, taken at the first open).
func childDir(s *Sandbox, parent *Dir, name string, hold bool) *Dir {
	var ino uint64
	return s.NewDir(func() string { return apipath.Child(parent.Path(), name) }, func() (int, error) {
		fd, st, err := parent.OpenDir(name)
		if err != nil {
			return -1, err
		}
		if ino == 0 {
			ino = st.Ino
		} else if st.Ino != ino {
			unix.Close(fd)
			return -1, unix.ENOENT
		}
		return fd, nil
	}, hold)
}

// TestDirDeep: every syscall of a Dir works at a depth past PATH_MAX, held
// or not, each change told once with its long API path, and lands where it
// should on the root.
func TestDirDeep(t *testing.T) {
	for _, hold := range []bool{true, false} {
		name := "held"
		if !hold {
			name = "unheld"
		}
		t.Run(name, func(t *testing.T) {
			s, root, w := watched(t)
			fuse := WithActor(ctx, Actor{Origin: journal.Mirror, Pid: 7, Uid: 0})
			seg := strings.Repeat("x", 200)
			d := s.RootDir()
			for i := 0; i < 24; i++ {
				if _, err := d.Mkdir(fuse, seg, 0o755, -1, -1); err != nil {
					t.Fatalf("mkdir at depth %d: %v", i, err)
				}
				d = childDir(s, d, seg, hold)
			}
			if len(d.Path()) <= unix.PathMax {
				t.Fatalf("path only %d long", len(d.Path()))
			}
			// The mkdirs' events are appended by the reader when they
			// joined what waited (the holes the too-long paths left):
			// settled, so the cursor is past them.
			settle(t, s, w, 0)
			cursor := s.Journal().Seq()
			h, st, err := d.Create(fuse, "f", unix.O_WRONLY, 0o640, -1, -1)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode != unix.S_IFREG|0o640 {
				t.Errorf("create: mode %o", st.Mode)
			}
			if _, err := h.File().Write([]byte("deep")); err != nil {
				t.Fatal(err)
			}
			h.Wrote()
			h.Flush(fuse)
			h.Release(fuse)
			h.File().Close()
			if st, err := d.Setattr(fuse, "f", SetAttr{Mode: ptr(uint32(0o600))}); err != nil || st.Mode&0o777 != 0o600 {
				t.Errorf("setattr: %v, mode %o", err, st.Mode)
			}
			if _, err := d.Link(fuse, d, "f", "hard"); err != nil {
				t.Fatal(err)
			}
			if _, err := d.Symlink(fuse, "f", "sym", -1, -1); err != nil {
				t.Fatal(err)
			}
			if tgt, err := d.Readlink("sym"); err != nil || tgt != "f" {
				t.Errorf("readlink: %q, %v", tgt, err)
			}
			if err := d.Rename(fuse, "hard", d, "moved", 0); err != nil {
				t.Fatal(err)
			}
			if st, err := d.Lookup(fuse, "moved"); err != nil || st.Nlink != 2 || st.Size != 4 {
				t.Errorf("lookup: %v nlink %d size %d", err, st.Nlink, st.Size)
			}
			rh, err := d.Open(fuse, "f", unix.O_RDONLY)
			if err != nil {
				t.Fatal(err)
			}
			buf := make([]byte, 8)
			n, _ := rh.File().Read(buf)
			rh.Release(fuse)
			rh.File().Close()
			if string(buf[:n]) != "deep" {
				t.Errorf("read %q", buf[:n])
			}
			for _, name := range []string{"moved", "sym", "f"} {
				if err := d.Unlink(fuse, name); err != nil {
					t.Fatal(err)
				}
			}
			p := d.Path()
			want := []string{
				"fuse create " + p + "/f",
				"fuse write " + p + "/f",
				"fuse chmod " + p + "/f",
				"fuse create " + p + "/hard",
				"fuse create " + p + "/sym",
				"fuse rename " + p + "/moved <- " + p + "/hard",
				"fuse remove " + p + "/moved",
				"fuse remove " + p + "/sym",
				"fuse remove " + p + "/f",
			}
			if got := fmtEvents(settle(t, s, w, cursor)); got != strings.Join(want, "\n") {
				t.Errorf("events:\n%s\nwant:\n%s", short(got), short(strings.Join(want, "\n")))
			}
			// The chain is on the root: take it down from the bottom.
			fd, err := unix.Open(root, unix.O_PATH|unix.O_DIRECTORY, 0)
			if err != nil {
				t.Fatal(err)
			}
			fds := []int{fd}
			for i := 0; i < 24; i++ {
				next, err := unix.Openat(fds[len(fds)-1], seg, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
				if err != nil {
					t.Fatalf("the chain is not on the root at depth %d: %v", i, err)
				}
				fds = append(fds, next)
			}
			for i := len(fds) - 2; i >= 0; i-- {
				if err := unix.Unlinkat(fds[i], seg, unix.AT_REMOVEDIR); err != nil {
					t.Fatalf("depth %d: %v", i, err)
				}
			}
			for _, fd := range fds {
				unix.Close(fd)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// short abbreviates the long segments of the deep paths for a message.
func short(s string) string { return strings.ReplaceAll(s, strings.Repeat("x", 200), "x…") }

// TestDirRelease: a held Dir keeps working through its descriptor; once
// released (the mirror does so when the journal tells the directory moved
// away) it opens itself from its parent again, and a directory that left
// the root is ENOENT: nothing is made outside.
func TestDirRelease(t *testing.T) {
	s, root, _ := watched(t)
	top := s.RootDir()
	if _, err := top.Mkdir(ctx, "a", 0o755, -1, -1); err != nil {
		t.Fatal(err)
	}
	a := childDir(s, top, "a", true)
	if _, err := a.Mknod(ctx, "before", unix.S_IFREG|0o644, 0, -1, -1); err != nil {
		t.Fatal(err)
	}
	if !a.Held() {
		t.Fatal("a covered directory is not held after a call")
	}
	away := filepath.Join(t.TempDir(), "away")
	if err := os.Rename(filepath.Join(root, "a"), away); err != nil {
		t.Fatal(err)
	}
	// Held: bind-mount semantics, it still reaches its inode.
	if _, err := a.Getattr("before"); err != nil {
		t.Errorf("held, before the release: %v", err)
	}
	a.Release()
	if a.Held() {
		t.Error("held after Release")
	}
	for name, call := range map[string]func() error{
		"mkdir":   func() error { _, err := a.Mkdir(ctx, "after", 0o755, -1, -1); return err },
		"create":  func() error { _, _, err := a.Create(ctx, "after", unix.O_WRONLY, 0o644, -1, -1); return err },
		"symlink": func() error { _, err := a.Symlink(ctx, "x", "after", -1, -1); return err },
		"getattr": func() error { _, err := a.Getattr("before"); return err },
		"setattr": func() error { _, err := a.Setattr(ctx, "before", SetAttr{Mode: ptr(uint32(0o600))}); return err },
		"unlink":  func() error { return a.Unlink(ctx, "before") },
	} {
		if err := call(); !errors.Is(err, unix.ENOENT) {
			t.Errorf("%s after the move: %v, want ENOENT", name, err)
		}
	}
	ents, _ := os.ReadDir(away)
	if len(ents) != 1 || ents[0].Name() != "before" {
		t.Errorf("outside the root now: %v", ents)
	}
	if fi, err := os.Stat(filepath.Join(away, "before")); err != nil || fi.Mode().Perm() != 0o644 {
		t.Errorf("the outside file changed: %v %v", fi, err)
	}
	// A new "a" in the root is another inode: the old Dir does not take it.
	if err := os.Mkdir(filepath.Join(root, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Getattr(""); !errors.Is(err, unix.ENOENT) {
		t.Errorf("the old Dir reached the new directory: %v", err)
	}
}

// TestDirReleaseDuringOpen: a Release that comes while the Dir is opening
// itself (the journal told the directory left the tree, in between) wins:
// the descriptor opened before it serves that one call and is not kept.
func TestDirReleaseDuringOpen(t *testing.T) {
	s, root, _ := watched(t)
	if err := os.Mkdir(filepath.Join(root, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	top := s.RootDir()
	var d *Dir
	released := false
	d = s.NewDir(func() string { return "/a" }, func() (int, error) {
		fd, _, err := top.OpenDir("a")
		if !released {
			released = true
			d.Release() // as the journal hook would, concurrently
		}
		return fd, err
	}, true)
	if _, err := d.Getattr(""); err != nil {
		t.Fatal(err)
	}
	if d.Held() {
		t.Error("a descriptor opened before a Release was kept")
	}
	if _, err := d.Getattr(""); err != nil {
		t.Fatal(err)
	}
	if !d.Held() {
		t.Error("a later call did not hold its descriptor")
	}
}
