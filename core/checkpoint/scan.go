package checkpoint

import (
	"context"
	"errors"
	"os"
	"sort"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/apipath"
	"sandfs/core/checkpoint/cas"
	"sandfs/core/journal"
	"sandfs/core/pathmatch"
	"sandfs/internal/xdev"
)

// builder finds how the tree differs from a previous checkpoint's (prev,
// nil for none): set holds the entries that are new or changed, del the
// paths that are gone. A file's content is read (and put in the store,
// unless store is nil: a dry run's hash only) only when its stat identity
// differs from prev's.
type builder struct {
	s     *core.Sandbox
	ctx   context.Context
	h     *cpStore
	prev  map[string]cpEntry
	skip  bool       // leave the default excludes out
	store *cas.Store // nil: hash, store nothing
	// pendingBytes is the allocated size of the files pending: what
	// storing them could add.
	pendingBytes int64
	set          map[string]cpEntry
	del          map[string]bool
	seen         map[string]bool // of the walks: what is there
	roots        map[string]bool // subtrees walked or gone: prev's entries beneath not seen are gone
	newBytes     int64
	newDisk      atomic.Int64 // what the objects it added take on disk (bound.go)
	pending      []string     // files whose content is to be read (stat identity changed)
}

func newBuilder(ctx context.Context, s *core.Sandbox, h *cpStore, prev map[string]cpEntry, skip bool, store *cas.Store) *builder {
	return &builder{s: s, ctx: ctx, h: h, prev: prev, skip: skip, store: store,
		set: map[string]cpEntry{}, del: map[string]bool{}, seen: map[string]bool{}, roots: map[string]bool{}}
}

// left reports whether ap is not recorded: core's temps, and the default
// excludes when skip.
func (b *builder) left(ap string) bool {
	if ap == "/" {
		return false
	}
	_, name := apipath.Split(ap)
	if core.IsTempName(name) {
		return true
	}
	return b.skip && pathmatch.InAnyComponent(ap[1:], pathmatch.DefaultExcludes)
}

// full walks the whole tree.
func (b *builder) full() error {
	b.h.walks.Add(1)
	b.roots["/"] = true
	if err := b.path("/"); err != nil {
		return err
	}
	return b.finish()
}

// since walks only what the journal's events after seq (up to upto) name:
// each path is looked at again, a directory made or moved is walked. It
// reports false when the journal lost events (the caller walks it all).
func (b *builder) since(seq, upto uint64) (bool, error) {
	paths := map[string]bool{}
	walk := map[string]bool{}
	lost, err := b.s.Journal().Scan(b.ctx, seq, func(e journal.Event) bool {
		if e.Seq > upto {
			return false
		}
		for _, p := range []string{e.Path, e.OldPath} {
			if p == "" || !strings.HasPrefix(p, "/") {
				continue
			}
			paths[p] = true
			if dir, _ := apipath.Split(p); p != "/" {
				paths[dir] = true
			}
		}
		// A directory made or moved here is walked, and so is the subtree
		// of a loss mark (journal.Lost: the kernel's queue overflowed).
		if e.Type == "" || e.IsDir && (e.Type == journal.Create || e.Type == journal.Rename) {
			walk[e.Path] = true
		}
		return true
	})
	if err != nil || lost {
		return false, err
	}
	list := make([]string, 0, len(paths))
	for p := range paths {
		list = append(list, p)
	}
	sort.Strings(list)
	for _, p := range list {
		if b.left(p) {
			continue
		}
		if walk[p] {
			b.roots[p] = true
		}
		if err := b.path(p); err != nil {
			return true, err
		}
	}
	return true, b.finish()
}

// path looks at ap again: gone, it is deleted (with its subtree); a
// directory in walk (or one prev did not have as one) is walked.
func (b *builder) path(ap string) error {
	if b.seen[ap] {
		return nil
	}
	var st unix.Stat_t
	dirfd, name, err := b.s.Root().StrictParent(ap)
	if err == nil {
		defer unix.Close(dirfd)
		_, err = xdev.LstatAt(dirfd, name, &st)
	}
	if err != nil || core.NotRegular(st.Mode) {
		if err != nil && !gone(err) {
			return core.PathErr("checkpoint", ap, err)
		}
		b.gone(ap)
		return nil
	}
	if st.Mode&unix.S_IFMT == unix.S_IFDIR && (b.roots[ap] || b.prev[ap].Kind != kindDir) {
		b.roots[ap] = true
		return b.entry(dirfd, name, ap, &st)
	}
	if b.prev[ap].Kind == kindDir && st.Mode&unix.S_IFMT != unix.S_IFDIR {
		b.roots[ap] = true // a directory no more: what was beneath is gone
	}
	b.seen[ap] = true // looked at, not walked
	e, ok, err := b.stat(dirfd, name, ap, &st)
	if err != nil || !ok {
		return err
	}
	b.record(ap, e)
	return nil
}

// gone records that ap (and, when prev had a directory there, everything
// beneath) is no longer there.
func (b *builder) gone(ap string) {
	if _, ok := b.prev[ap]; ok {
		b.del[ap] = true
	}
	delete(b.set, ap)
	if b.prev[ap].Kind == kindDir {
		b.roots[ap] = true
	}
}

func gone(err error) bool {
	return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) || errors.Is(err, unix.ELOOP)
}

func (b *builder) record(ap string, e cpEntry) {
	b.seen[ap] = true
	delete(b.del, ap)
	if old, ok := b.prev[ap]; ok && old == e {
		delete(b.set, ap)
		return
	}
	b.set[ap] = e
}

// entry records name in dirfd (stat st), and a directory's whole subtree.
func (b *builder) entry(dirfd int, name, ap string, st *unix.Stat_t) error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	e, ok, err := b.stat(dirfd, name, ap, st)
	if err != nil || !ok {
		return err
	}
	b.record(ap, e)
	if e.Kind != kindDir {
		return nil
	}
	fd, err := xdev.OpenSubdir(dirfd, name)
	if err != nil {
		if gone(err) || err == unix.EXDEV {
			return nil // another mount is kept as an empty directory (internal/xdev)
		}
		return core.PathErr("checkpoint", ap, err)
	}
	d := os.NewFile(uintptr(fd), ap)
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return core.PathErr("checkpoint", ap, err)
	}
	sort.Strings(names)
	fan := b.fanOut(ap)
	var dirs []*subdir // scan_fan.go
	for _, n := range names {
		cp := apipath.Child(ap, n)
		if b.left(cp) {
			continue
		}
		var cst unix.Stat_t
		if _, err := xdev.LstatAt(fd, n, &cst); err != nil || core.NotRegular(cst.Mode) {
			continue // gone since readdir, or a FIFO, socket or device: not recorded
		}
		if fan && cst.Mode&unix.S_IFMT == unix.S_IFDIR {
			dirs = append(dirs, &subdir{name: n, ap: cp, st: cst})
			continue
		}
		if err := b.entry(fd, n, cp, &cst); err != nil {
			return err
		}
	}
	if len(dirs) >= fanMin {
		return b.fan(fd, dirs)
	}
	for _, d := range dirs {
		if err := b.entry(fd, d.name, d.ap, &d.st); err != nil {
			return err
		}
	}
	return nil
}

// stat is the entry of name in dirfd (stat st): a file whose identity
// matches prev's keeps prev's hash, others are read.
func (b *builder) stat(dirfd int, name, ap string, st *unix.Stat_t) (cpEntry, bool, error) {
	return b.statTry(dirfd, name, ap, st, 1)
}

// statTry is stat's try number try: a symlink swapped for another kind
// between its lstat and its readlink (EINVAL) is looked at again, up to
// readTries times, then the checkpoint fails as for a file that kept
// changing (EAGAIN): the tree changed under it, not the request.
func (b *builder) statTry(dirfd int, name, ap string, st *unix.Stat_t, try int) (cpEntry, bool, error) {
	e := cpEntry{Perm: st.Mode & 0o7777, Uid: st.Uid, Gid: st.Gid, Mtime: st.Mtim.Nano(),
		Dev: st.Dev, Ino: st.Ino, Ctime: st.Ctim.Nano()}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
		e.Kind = kindDir
		return e, true, nil
	case unix.S_IFLNK:
		e.Kind = kindLink
		t, err := core.Readlinkat(dirfd, name)
		if errors.Is(err, unix.EINVAL) {
			if try >= readTries {
				return e, false, core.PathErr("checkpoint", ap, ErrKeptChanging)
			}
			var again unix.Stat_t
			if _, err := xdev.LstatAt(dirfd, name, &again); err != nil || core.NotRegular(again.Mode) {
				return e, false, nilIfGone(ap, err)
			}
			return b.statTry(dirfd, name, ap, &again, try+1)
		}
		if err != nil {
			return e, false, nilIfGone(ap, err)
		}
		e.Target, e.Size = t, int64(len(t))
		return e, true, nil
	}
	e.Kind, e.Size = kindFile, st.Size
	if p, ok := b.prev[ap]; ok && p.Kind == kindFile && p.Dev == e.Dev && p.Ino == e.Ino &&
		p.Size == e.Size && p.Mtime == e.Mtime && p.Ctime == e.Ctime {
		e.Hash = p.Hash
		return e, true, nil
	}
	b.pending = append(b.pending, ap) // read by readPending, in parallel
	b.pendingBytes += st.Blocks * 512 // what storing it may take (bound.go)
	return e, true, nil
}

func nilIfGone(ap string, err error) error {
	if gone(err) {
		return nil
	}
	return core.PathErr("checkpoint", ap, err)
}

// finish deletes prev's entries beneath each root the walks did not see.
func (b *builder) finish() error {
	if err := b.checkBound(); err != nil {
		return err
	}
	if err := b.readPending(); err != nil {
		return err
	}
	if len(b.roots) == 0 {
		return nil
	}
	for p := range b.prev {
		if b.seen[p] {
			continue
		}
		for a := p; ; {
			if b.roots[a] && a != p {
				b.del[p] = true
				delete(b.set, p)
				break
			}
			if a == "/" {
				break
			}
			a, _ = apipath.Split(a)
		}
	}
	return nil
}
