package core

import (
	"context"
	"io/fs"
	"maps"
	"path"
	"sync"

	"golang.org/x/sys/unix"

	"sandfs/core/history"
	"sandfs/internal/parallel"
	"sandfs/internal/xdev"
)

// walkWorkers is how many of the root's directories the manifest's walk
// reads at once. A walk is a stat of each entry: one at a time it waits
// on the kernel with a core idle, and the comparison at start (which
// tells what changed while no daemon served the root) is that walk.
const walkWorkers = 4

// walkManifest is the tree now, and the journal's seq before the walk.
// It is the walk of the whole tree (Walk's rules: no symlink followed,
// no other mount entered, the daemon's temps left out), the root's
// directories walked side by side.
func (s *Sandbox) walkManifest(ctx context.Context) (uint64, map[string]history.Entry, error) {
	seq := s.journal.Seq()
	fd, err := s.root.OpenBeneath("/", unix.O_RDONLY|unix.O_DIRECTORY, 0)
	if err != nil {
		return 0, nil, PathErr(OpWalk, "/", err)
	}
	defer unix.Close(fd)
	top, err := unix.Dup(fd) // the walker closes what it walks
	if err != nil {
		return 0, nil, PathErr(OpWalk, "/", err)
	}
	out := map[string]history.Entry{}
	w := &walker{s: s, ctx: ctx, o: WalkOptions{MaxDepth: 1}, fn: manifestInto(out)}
	if err := w.dir(top, "/", "", 1); err != nil {
		return 0, nil, err
	}
	var dirs []string // the root's directories, by their API paths
	for p, e := range out {
		if e.IsDir {
			dirs = append(dirs, p)
		}
	}
	var mu sync.Mutex
	err = parallel.Each(ctx, walkWorkers, dirs, func(ctx context.Context, p string) error {
		sub, err := xdev.OpenSubdir(fd, p[1:])
		if err != nil {
			return nil // gone, swapped for a symlink or a mount: as Walk skips it
		}
		part := map[string]history.Entry{}
		w := &walker{s: s, ctx: ctx, fn: manifestInto(part)}
		if err := w.dir(sub, p, p[1:], 2); err != nil {
			return err
		}
		mu.Lock()
		maps.Copy(out, part)
		mu.Unlock()
		return nil
	})
	return seq, out, err
}

// manifestInto is a walk's function keeping each entry in m (the
// daemon's temps left out, not descended).
func manifestInto(m map[string]history.Entry) func(WalkEntry) error {
	return func(e WalkEntry) error {
		if IsTempName(path.Base(e.Path)) {
			return fs.SkipDir // the daemon's own: never a change to tell
		}
		m[e.Path] = history.Entry{Inode: e.Inode, Size: e.Size, Mtime: e.ModTime, Mode: e.Mode, IsDir: e.IsDir()}
		return nil
	}
}
