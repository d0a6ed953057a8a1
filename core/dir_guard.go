package core

import (
	"context"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
	"sandfs/core/journal"
)

// A change the mirror makes by name in a Dir lands wherever the Dir's
// descriptor is now, and a held one (dir.go) may have been moved by an
// outside rename since it was opened: out of the root, or elsewhere in
// it. The watch tells such a move, and the mirror lets the descriptor go,
// but only once the journal holds the move; a change made through the
// descriptor in between would be told under a path the directory no
// longer has ("create /p/hd/f" after "remove /p/hd").
//
// So every move or removal of a directory, and every loss that may hide
// one, counts (watch.Watch.DirMoved) before it is told, and a Dir call reads the
// count when its descriptor was last known to be where its path says (when
// it was opened). Its event carries a guard: where the count has moved
// since, the event is told under the directory's path now, read from the
// descriptor itself (/proc/self/fd), or not at all when the directory is
// outside the root or deleted. The check and the append hold the outbox's
// lock, which every event of the watch takes too, so a move told after the
// check is told after the event. Counting costs an atomic add per
// directory moved; the check, two readlinks, runs only after one.

// dirGuard is what an event of a Dir call is checked against: the count
// when its descriptors were known in place, the descriptor of the
// directory of its path and of its old path (-1: none), and the Dir that
// holds dir, whose count a check that finds it in place brings forward.
type dirGuard struct {
	g           uint64
	dir, oldDir int
	self        bool // the event's path is dir's own, not a name in it
	holder      *Dir
}

type guardKey struct{}

// guarded is ctx with the guard of the events a Dir call tells.
func guarded(ctx context.Context, g dirGuard) context.Context {
	return context.WithValue(ctx, guardKey{}, g)
}

// appendGuarded appends e, a Dir call's event, as append does for the
// mirror, after the guard's check, which runs under the outbox's lock
// (watch.Watch.AppendChecked).
func (s *Sandbox) appendGuarded(e journal.Event, gd dirGuard) {
	s.watch.AppendChecked(e, func(e *journal.Event, now uint64) bool {
		if now == gd.g {
			return true
		}
		p, old := e.Path, e.OldPath
		if !s.root.relocate(&e.Path, gd.dir, gd.self) || !s.root.relocate(&e.OldPath, gd.oldDir, false) {
			return false // the directory left the root: the change is not the sandbox's
		}
		if gd.holder != nil && e.Path == p && e.OldPath == old {
			gd.holder.inPlace(gd.dir, now)
		}
		return true
	})
}

// relocate sets *ap to its name in the directory dirfd (self: to dirfd
// itself) at that directory's path in the root now, and reports false when
// dirfd is deleted or outside the root. An empty *ap or a dirfd of -1 is
// left as it is.
func (r *Root) relocate(ap *string, dirfd int, self bool) bool {
	if *ap == "" || dirfd < 0 {
		return true
	}
	var st unix.Stat_t
	if unix.Fstat(dirfd, &st) != nil || st.Nlink == 0 {
		return false
	}
	dir, err := fdPath(dirfd)
	if err != nil {
		return false
	}
	root, err := fdPath(r.fd)
	if err != nil {
		return false
	}
	var at string
	switch {
	case dir == root:
		at = "/"
	case strings.HasPrefix(dir, root+"/") || root == "/":
		at = "/" + strings.TrimPrefix(strings.TrimPrefix(dir, root), "/")
	default:
		return false
	}
	if self {
		*ap = at
		return true
	}
	_, name := apipath.Split(*ap)
	*ap = apipath.Child(at, name)
	return true
}

// fdPath is the path the kernel gives the file fd holds now.
func fdPath(fd int) (string, error) {
	buf := make([]byte, unix.PathMax)
	n, err := unix.Readlink("/proc/self/fd/"+strconv.Itoa(fd), buf)
	if err != nil {
		return "", err
	}
	return string(buf[:n]), nil
}

// changeAt is at for a call that changes name in d ("" for d itself): ctx
// gains the guard of the events it tells. The root's descriptor is the
// root wherever it is, so its calls need none.
func (d *Dir) changeAt(ctx context.Context) (context.Context, int, func(int), error) {
	fd, done, g, err := d.atG()
	if err != nil || d.root {
		return ctx, fd, done, err
	}
	return guarded(ctx, dirGuard{g: g, dir: fd, oldDir: -1, holder: d}), fd, done, nil
}

// inPlace brings d's count forward to g: a check found its descriptor fd
// where its path says.
func (d *Dir) inPlace(fd int, g uint64) {
	d.mu.Lock()
	if d.fd == fd && g > d.heldG {
		d.heldG = g
	}
	d.mu.Unlock()
}

// changeTarget is target for a call that changes name in d ("" for d
// itself): ctx gains the guard of its events, on the descriptor of exactly
// the file it changes.
func (d *Dir) changeTarget(ctx context.Context, name string) (context.Context, int, func(int), error) {
	fd, done, g, err := d.targetG(name)
	if err != nil || d.root && name == "" {
		return ctx, fd, done, err
	}
	gd := dirGuard{g: g, dir: fd, oldDir: -1, self: true}
	if name == "" {
		gd.holder = d
	}
	return guarded(ctx, gd), fd, done, nil
}
