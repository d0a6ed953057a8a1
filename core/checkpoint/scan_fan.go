package checkpoint

import (
	"context"
	"runtime"

	"golang.org/x/sys/unix"

	"sandfs/internal/parallel"
)

// A whole walk is some 100,000 lstats of a large tree, bound by the
// syscalls, not by anything shared: the root's directories are walked
// side by side, each by a builder of its own over the same prev, and
// what they found is joined, so the result (entries set, paths seen,
// subtrees walked, files to read) is the one a single walk finds.

// fanMin is how many directories the root must hold to be walked side by
// side: fewer, and the goroutines cost more than they win.
const fanMin = 2

// subdir is one directory of the root to walk: its name, API path and
// stat, and the builder that walks it.
type subdir struct {
	name, ap string
	st       unix.Stat_t
	b        *builder
}

// fan walks the directories dirs of the directory fd side by side, then
// joins what each found into b.
func (b *builder) fan(fd int, dirs []*subdir) error {
	for _, d := range dirs {
		d.b = newBuilder(b.ctx, b.s, b.h, b.prev, b.skip, b.store)
	}
	workers := min(runtime.GOMAXPROCS(0), len(dirs))
	err := parallel.Each(b.ctx, workers, dirs, func(ctx context.Context, d *subdir) error {
		return d.b.entry(fd, d.name, d.ap, &d.st)
	})
	if err != nil {
		return err
	}
	for _, d := range dirs {
		for p, e := range d.b.set {
			b.set[p] = e
		}
		for p := range d.b.seen {
			b.seen[p] = true
		}
		for p := range d.b.roots {
			b.roots[p] = true
		}
		b.pending = append(b.pending, d.b.pending...)
		b.pendingBytes += d.b.pendingBytes
	}
	return nil
}

// fanOut reports whether the children of the directory ap are walked side
// by side: the root's, in a whole walk, on a machine of more than one core.
func (b *builder) fanOut(ap string) bool {
	return ap == "/" && b.roots["/"] && runtime.GOMAXPROCS(0) > 1
}
