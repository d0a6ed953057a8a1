package checkpoint

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/internal/testenv"
)

// TestCopyTree: a checkpoint's tree copied into an empty directory is the
// tree as the checkpoint saw it, whatever changed in the root since:
// content, modes (set-id bits only where the sandbox allows them),
// owners, times (the symlinks' and the root's too), empty and read-only
// directories, holes kept; each file of content counted as cloned or
// copied. A stopped copy and an unknown checkpoint are errors.
func TestCopyTree(t *testing.T) {
	old := time.Date(2001, 2, 3, 4, 5, 6, 7, time.UTC)
	for _, c := range []struct {
		name   string
		root   bool                    // needs root (owners not the daemon's)
		tree   map[string]string       // testenv.Mk's
		setup  func(root string)       // after Mk, before the checkpoint
		expect func(map[string]string) // the digest the copy has, from the root's
		check  func(t *testing.T, root, copy string)
	}{{
		name: "files, modes and directories",
		tree: map[string]string{"a.txt": "alpha", "x.sh": "#!/bin/sh\n", "d/b.txt": "beta", "empty/": "", "ro/f": "f",
			"deep/er/est/g": "g", "zero": ""},
		setup: func(root string) {
			must(t, os.Chmod(filepath.Join(root, "x.sh"), 0o755))
			must(t, os.Chmod(filepath.Join(root, "d"), 0o750))
			must(t, os.Chmod(filepath.Join(root, "ro/f"), 0o400))
			must(t, os.Chmod(filepath.Join(root, "ro"), 0o555)) // its attributes after what it holds
			must(t, os.Chtimes(filepath.Join(root, "deep/er"), old, old))
		},
	}, {
		name: "symlinks and their times",
		tree: map[string]string{"a.txt": "alpha", "ln": "->a.txt", "dangling": "->nowhere", "abs": "->/etc/passwd",
			"d/up": "->../a.txt", "lnd": "->d"},
		setup: func(root string) {
			for _, l := range []string{"ln", "abs", "d/up"} {
				must(t, unix.Lutimes(filepath.Join(root, l), []unix.Timeval{unix.NsecToTimeval(old.UnixNano()), unix.NsecToTimeval(old.UnixNano())}))
			}
		},
		check: func(t *testing.T, root, copy string) {
			for _, l := range []string{"ln", "dangling", "abs", "d/up", "lnd"} {
				var a, b unix.Stat_t
				must(t, unix.Lstat(filepath.Join(root, l), &a))
				must(t, unix.Lstat(filepath.Join(copy, l), &b))
				if b.Mode&unix.S_IFMT != unix.S_IFLNK || a.Mtim != b.Mtim {
					t.Errorf("%s: mode %o mtime %v; want a symlink of mtime %v", l, b.Mode, b.Mtim, a.Mtim)
				}
			}
		},
	}, {
		name: "holes",
		tree: map[string]string{"head": "x"},
		setup: func(root string) {
			f, err := os.Create(filepath.Join(root, "sparse"))
			must(t, err)
			_, err = f.WriteAt([]byte("end"), 4<<20)
			must(t, err)
			must(t, f.Close())
		},
		check: func(t *testing.T, root, copy string) {
			var st unix.Stat_t
			must(t, unix.Stat(filepath.Join(copy, "sparse"), &st))
			if st.Size != 4<<20+3 || st.Blocks*512 > 256<<10 {
				t.Errorf("the copy of a sparse file holds %d blocks for %d bytes: its holes were filled", st.Blocks, st.Size)
			}
		},
	}, {
		name: "set-id bits dropped",
		tree: map[string]string{"suid": "#!/bin/sh\n"},
		setup: func(root string) {
			must(t, os.Chmod(filepath.Join(root, "suid"), 0o755|os.ModeSetuid|os.ModeSetgid))
		},
		expect: func(want map[string]string) {
			want["suid"] = strings.Replace(want["suid"], "file ug", "file -", 1) // os.FileMode writes set-id bits as u and g in the place of -
		},
	}, {
		name: "owners",
		root: true,
		tree: map[string]string{"mine": "m", "theirs/f": "t", "ln": "->mine"},
		setup: func(root string) {
			for _, p := range []string{"theirs/f", "theirs", "ln"} {
				must(t, os.Lchown(filepath.Join(root, p), 65534, 65534))
			}
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			if c.root && os.Geteuid() != 0 {
				testenv.Skip(t, nil, "CopyTree's owners NOT TESTED: giving a file another's owner needs root")
			}
			root := t.TempDir()
			mk(t, root, c.tree)
			if c.setup != nil {
				c.setup(root)
			}
			want := treeDigest(t, root)
			if c.expect != nil {
				c.expect(want)
			}
			s := histSandbox(t, root)
			cp := mustCheckpoint(t, s, Options{})
			write(t, s, "/after.txt", "written after the checkpoint")
			copy := filepath.Join(t.TempDir(), "copy")
			must(t, os.Mkdir(copy, 0o700))
			t.Cleanup(func() { writable(root); writable(copy) }) // a read-only directory stops TempDir's removal, but as root
			fd, err := unix.Open(copy, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
			must(t, err)
			defer unix.Close(fd)
			st, err := CopyTree(ctx, s, cp.ID, fd)
			if err != nil {
				t.Fatal(err)
			}
			sameTree(t, "the copy", want, treeDigest(t, copy))
			files := 0
			var size int64
			for p, v := range c.tree {
				if v != "" && v[0] != '-' && p[len(p)-1] != '/' {
					files++
					size += int64(len(v))
				}
			}
			if c.name == "holes" {
				files, size = files+1, size+4<<20+3
			}
			if st.Entries != len(want) || st.Cloned+st.Copied != files || st.Bytes != size {
				t.Errorf("stats %+v; want %d entries, %d files of %d bytes", st, len(want), files, size)
			}
			if c.check != nil {
				c.check(t, root, copy)
			}
		})
	}
}

// TestCopyTreeRefusals: a stopped copy ends with ctx's error, an unknown
// checkpoint is ErrUnknown.
func TestCopyTreeRefusals(t *testing.T) {
	root := t.TempDir()
	mk(t, root, map[string]string{"a.txt": "alpha", "d/b.txt": "beta"})
	s := histSandbox(t, root)
	cp := mustCheckpoint(t, s, Options{})
	fd, err := unix.Open(t.TempDir(), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	must(t, err)
	defer unix.Close(fd)
	stopped, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := CopyTree(stopped, s, cp.ID, fd); !errors.Is(err, context.Canceled) {
		t.Errorf("a stopped copy: %v", err)
	}
	for _, id := range []string{"cp_000000000000", "../../etc"} {
		if _, err := CopyTree(ctx, s, id, fd); !errors.Is(err, ErrUnknown) {
			t.Errorf("CopyTree of %q: %v", id, err)
		}
	}
}

// writable gives every directory under dir its owner's write permission.
func writable(dir string) {
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o700)
		}
		return nil
	})
}
