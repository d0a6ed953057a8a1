package core

import (
	"context"
	"io"
	"io/fs"
	"os"
	"sandfs/core/apipath"
	"sandfs/internal/xdev"
	"sort"
	"strings"

	"golang.org/x/sys/unix"
)

// OpWalk names walk failures.
const OpWalk = "walk"

// WalkOptions bound a Walk.
type WalkOptions struct {
	// MaxDepth is how deep entries are reported: 1 is the directory's own
	// entries, 2 their children too, and so on; 0 is no bound.
	MaxDepth int
	// NoHidden skips names starting with "." (and does not descend into
	// hidden directories).
	NoHidden bool
}

// WalkEntry is one entry a Walk meets.
type WalkEntry struct {
	Info            // as lstat sees it: a symlink is a symlink
	Rel      string // path relative to the walked directory ("a/b.txt")
	Depth    int    // 1 for the directory's own entries
	LinkDir  bool   // a symlink whose target (resolved within the root) is a directory
	LinkDead bool   // a symlink whose target is missing or outside reach
}

// IsDirLike reports whether the entry is a directory or a symlink to one
// (the AIO listing counts both as directories).
func (e WalkEntry) IsDirLike() bool { return e.IsDir() || e.LinkDir }

// Walk visits the entries under the directory p (following a final symlink
// of p itself), depth first, each directory's names in byte order, calling
// fn for each. Directories are opened by fd from their parent with
// O_NOFOLLOW, so a symlink is reported and never descended (nor can a swap
// race lead the walk out of the root). fn returns fs.SkipDir to skip a
// directory's contents, fs.SkipAll to stop the walk (Walk then returns nil),
// or another error to abort with it. Entries that vanish mid-walk are
// skipped, and so are names that are not UTF-8 (counted, names.go). Walking a non-directory is ENOTDIR.
func (s *Sandbox) Walk(ctx context.Context, p string, o WalkOptions, fn func(WalkEntry) error) error {
	ap, err := s.Clean(p)
	if err != nil {
		return err
	}
	fd, err := s.root.OpenBeneath(ap, unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return PathErr(OpWalk, ap, err)
	}
	w := &walker{s: s, ctx: ctx, o: o, fn: fn}
	err = w.dir(fd, ap, "", 1)
	if err == fs.SkipAll {
		return nil
	}
	return err
}

type walker struct {
	s   *Sandbox
	ctx context.Context
	o   WalkOptions
	fn  func(WalkEntry) error
}

// dir walks the open directory fd (closing it), at API path ap, relative
// path rel; its entries are at depth.
func (w *walker) dir(fd int, ap, rel string, depth int) error {
	d := os.NewFile(uintptr(fd), ap)
	var names []string
	for {
		batch, err := d.Readdirnames(1024)
		names = append(names, batch...)
		if err == io.EOF || len(batch) == 0 {
			break
		}
		if err != nil {
			d.Close()
			return PathErr(OpWalk, ap, err)
		}
	}
	sort.Strings(names)
	defer d.Close()
	for _, name := range names {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		if w.o.NoHidden && strings.HasPrefix(name, ".") {
			continue
		}
		if Unreportable(w.ctx, name) {
			continue // names.go: not reported, not descended
		}
		var st unix.Stat_t
		mount, err := xdev.LstatAt(fd, name, &st)
		if err != nil {
			continue // gone since readdir
		}
		e := WalkEntry{Info: InfoFrom(apipath.Child(ap, name), &st), Rel: name, Depth: depth}
		if rel != "" {
			e.Rel = rel + "/" + name
		}
		if e.IsSymlink() {
			if ti, err := w.s.Stat(w.ctx, e.Path); err == nil {
				e.LinkDir = ti.IsDir()
			} else {
				e.LinkDead = true
			}
		}
		err = w.fn(e)
		if err == fs.SkipDir {
			continue
		}
		if err != nil {
			return err
		}
		if !e.IsDir() || mount || (w.o.MaxDepth > 0 && depth >= w.o.MaxDepth) {
			continue // another mount is not entered (internal/xdev)
		}
		sub, err := xdev.OpenSubdir(fd, name)
		if err != nil {
			continue // gone, swapped for a symlink or a mount, or unreadable: skip
		}
		if err := w.dir(sub, e.Path, e.Rel, depth+1); err != nil {
			return err
		}
	}
	return nil
}
