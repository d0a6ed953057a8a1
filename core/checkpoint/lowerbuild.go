package checkpoint

import (
	"context"
	"path"
	"runtime"
	"sort"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint/cas"
	"sandfs/internal/safeat"
	"sandfs/internal/xdev"
)

// lowerBuild writes one tree: a made tree (Materialize) or a copy
// (CopyTree), which differ only in what they put in a file of content.
type lowerBuild struct {
	s *core.Sandbox
	// content fills the new, empty file fd with the content of e (its
	// size above 0); its attributes are set after.
	content func(fd int, e cpEntry) error

	dir    string // the API path of the directory dirfd holds
	dirfd  int    // -1 when none
	rootfd int

	// from is a tree made before whose unchanged entries are linked
	// (lowerlink.go), nil when none; fromDirfd holds its directory
	// fromDir (-1 when none).
	from      *madeTree
	fromDir   string
	fromDirfd int

	creds createCreds // what a create gives (lowercreds.go)

	// objects is the store whose objects a made tree's files may be
	// (lowerobject.go); nil for a copy, whose files are written.
	objects *cas.Store

	// made, when set, is told each file made anew (path, entry, and fd
	// open on it with its attributes set); workers call it at once.
	made func(p string, e cpEntry, fd int)
}

// build makes every entry of files beneath name in lfd: parents before
// children, then each directory's own mode, owner and times, deepest
// first (a child made after would move its mtime).
func (b *lowerBuild) build(ctx context.Context, lfd int, name string, files map[string]cpEntry) error {
	rootfd, err := unix.Openat(lfd, name, unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(rootfd)
	return b.buildAt(ctx, rootfd, files)
}

// buildAt is build into the directory rootfd (the caller's to close),
// ending with one syncfs of its filesystem. The directories are made
// first, in order; then the other entries, a directory's at a time, by
// as many workers as the machine has cores (up to buildWorkers): each
// entry costs several calls (create, size, xattrs, owner, mode, times),
// and creates in different directories do not wait on one another.
func (b *lowerBuild) buildAt(ctx context.Context, rootfd int, files map[string]cpEntry) error {
	b.start(rootfd)
	defer b.closeDir()
	dirs, groups, err := b.makeDirs(ctx, files)
	if err != nil {
		return err
	}
	if err := b.makeAll(ctx, groups); err != nil {
		return err
	}
	return b.end(dirs, files)
}

// start readies b to build into the directory rootfd.
func (b *lowerBuild) start(rootfd int) {
	b.rootfd, b.dirfd, b.fromDirfd = rootfd, -1, -1
	b.creds = probeCreds(rootfd)
}

// makeDirs makes the directories of files, in order (a parent sorts
// before what it holds), and answers them and the other entries, in runs
// of one directory's, for makeAll.
func (b *lowerBuild) makeDirs(ctx context.Context, files map[string]cpEntry) (dirs []string, groups []*entryGroup, err error) {
	paths := make([]string, 0, len(files))
	for p := range files {
		if p != "/" {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	claim := b.objectClaims()
	for i, p := range paths {
		if i%256 == 0 && ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		e := files[p]
		if e.Kind != kindDir {
			groups = appendGroup(groups, groupItem{p, e, claim(e)})
			continue
		}
		if err := b.make(p, e, false); err != nil {
			return nil, nil, core.PathErr("materialize", p, err)
		}
		dirs = append(dirs, p)
	}
	b.closeDir()
	return dirs, groups, nil
}

// appendGroup adds it to the run of its directory's entries that ends
// groups, or to a new one.
func appendGroup(groups []*entryGroup, it groupItem) []*entryGroup {
	d := path.Dir(it.p)
	if len(groups) == 0 || groups[len(groups)-1].dir != d {
		groups = append(groups, &entryGroup{dir: d})
	}
	g := groups[len(groups)-1]
	g.items = append(g.items, it)
	return groups
}

// end gives the directories dirs of files their own mode, owner and
// times, deepest first (a child made after would move its mtime), then
// the root its own, and ends with one syncfs of the tree's filesystem.
func (b *lowerBuild) end(dirs []string, files map[string]cpEntry) error {
	for i := len(dirs) - 1; i >= 0; i-- {
		if err := b.dirAttrs(dirs[i], files[dirs[i]]); err != nil {
			return core.PathErr("materialize", dirs[i], err)
		}
	}
	if e, ok := files["/"]; ok {
		if err := setFileAttrs(b.s, b.rootfd, e); err != nil {
			return core.PathErr("materialize", "/", err)
		}
	}
	sfd, err := safeat.Reopen(b.rootfd, unix.O_RDONLY|unix.O_DIRECTORY) // syncfs refuses an O_PATH descriptor
	if err != nil {
		return err
	}
	defer unix.Close(sfd)
	return unix.Syncfs(sfd)
}

// buildWorkers bounds the workers of a build: past the cores, they only
// wait on one another.
const buildWorkers = 4

// entryGroup is a run of entries of one directory (files and symlinks,
// in path order): what a worker makes at a time. A directory whose
// entries sort apart (a subdirectory's between them) has several.
type entryGroup struct {
	dir   string
	items []groupItem
}

type groupItem struct {
	p   string
	e   cpEntry
	obj bool // e's file may be its object (lowerobject.go)
}

// makeAll makes the entries of groups (their directories made), a group
// at a time per worker; the first error stops every worker and is
// answered.
func (b *lowerBuild) makeAll(ctx context.Context, groups []*entryGroup) error {
	n := min(runtime.GOMAXPROCS(0), buildWorkers, max(len(groups), 1))
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan *entryGroup)
	var wg sync.WaitGroup
	for range n {
		w := b.worker()
		wg.Go(func() {
			defer w.closeDir()
			defer w.closeFromDir()
			for g := range next {
				for i, it := range g.items {
					if i%256 == 0 && ctx.Err() != nil {
						return
					}
					if err := w.make(it.p, it.e, it.obj); err != nil {
						cancel(core.PathErr("materialize", it.p, err))
						return
					}
				}
			}
		})
	}
feed:
	for _, g := range groups {
		select {
		case next <- g:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	return context.Cause(ctx) // nil unless a worker failed or ctx ended
}

// worker is a builder of b's tree holding no directory of its own, for
// one goroutine; the caller closes what it comes to hold (closeDir,
// closeFromDir).
func (b *lowerBuild) worker() *lowerBuild {
	return &lowerBuild{s: b.s, content: b.content, rootfd: b.rootfd, dirfd: -1, from: b.from, fromDirfd: -1,
		creds: b.creds, objects: b.objects, made: b.made}
}

// parent holds the directory of API path p (the one held already when p
// is its sibling's neighbour) and answers p's name in it.
func (b *lowerBuild) parent(p string) (int, string, error) {
	dir, name := path.Split(p)
	dir = strings.TrimSuffix(dir, "/")
	if b.dirfd >= 0 && dir == b.dir {
		return b.dirfd, name, nil
	}
	b.closeDir()
	if dir == "" {
		return b.rootfd, name, nil
	}
	fd, err := b.openDir(dir)
	if err != nil {
		return -1, "", err
	}
	b.dirfd, b.dir = fd, dir
	return fd, name, nil
}

// openDir opens the tree's directory of API path p, beneath the tree and
// through no symlink (core's strict resolution: openat2, or a walk where
// the kernel has none, as a copy's may not).
func (b *lowerBuild) openDir(p string) (int, error) {
	return xdev.OpenBelow(b.rootfd, p[1:])
}

func (b *lowerBuild) closeDir() {
	if b.dirfd >= 0 {
		unix.Close(b.dirfd)
		b.dirfd = -1
	}
}

// make makes entry e at p; obj: its file may be its object.
func (b *lowerBuild) make(p string, e cpEntry, obj bool) error {
	dfd, name, err := b.parent(p)
	if err != nil {
		return err
	}
	if e.Kind != kindDir && b.linkFrom(p, e, dfd, name) {
		return nil
	}
	if obj && b.linkObject(e, dfd, name) {
		return nil
	}
	switch e.Kind {
	case kindDir:
		return unix.Mkdirat(dfd, name, 0o700)
	case kindLink:
		if err := unix.Symlinkat(e.Target, dfd, name); err != nil {
			return err
		}
		b.lchown(dfd, name, e)
		return safeat.LutimesAt(dfd, name, times(e.Mtime))
	}
	mode := b.creds.createMode(e)
	fd, err := unix.Openat(dfd, name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, mode)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if e.Size > 0 {
		if err := b.content(fd, e); err != nil {
			return err
		}
	}
	if err := b.setAttrs(fd, e, mode); err != nil {
		return err
	}
	if b.made != nil {
		b.made(p, e, fd)
	}
	return nil
}
