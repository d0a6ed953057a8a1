// Package du counts a subtree the way a sandbox's usage does (core/quota):
// each regular file's size once per inode however many names it has, every
// name an entry, and in an overlay's upper (a fork's) the overlay's own
// bookkeeping weighing nothing. Its rule: it reads a tree by descriptor, as
// the daemon's walks do (internal/xdev): never through a symlink, never
// into another mount; it changes nothing.
package du

import (
	"context"
	"os"

	"golang.org/x/sys/unix"

	"sandfs/core/quota"
	"sandfs/internal/overlay"
	"sandfs/internal/xdev"
)

// Measurer walks subtrees by fd and counts them the way usage does: each
// regular file's inode once (seen holds the inodes with more than one
// link met so far).
type Measurer struct {
	ctx  context.Context
	seen map[quota.InoKey]bool
	// Upper says the tree is an overlay's upper: its bookkeeping weighs as
	// core/quota's "Forks" says.
	Upper bool
}

// NewMeasurer is a Measurer that stops when ctx ends.
func NewMeasurer(ctx context.Context) *Measurer { return &Measurer{ctx: ctx} }

// Entry counts name in dirfd (described by st when not nil) and all under it.
func (m *Measurer) Entry(dirfd int, name string, st *unix.Stat_t) (quota.Count, error) {
	var own unix.Stat_t
	if st == nil {
		if _, err := xdev.LstatAt(dirfd, name, &own); err != nil {
			return quota.Count{}, err
		}
		st = &own
	}
	if m.Upper && isWhiteout(st) {
		return quota.Count{}, nil
	}
	u := quota.Count{Entries: 1}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if !m.Upper || !isMetacopy(dirfd, name, st) {
			u.Bytes = m.file(st)
		}
	case unix.S_IFDIR:
		fd, err := xdev.OpenSubdir(dirfd, name)
		if err == unix.EXDEV {
			return u, nil // another mount: not the root's (internal/xdev)
		}
		if err != nil {
			return u, err
		}
		in, err := m.Dir(fd)
		u.Add(in)
		return u, err
	}
	return u, nil
}

// file is what the regular file of stat st adds: its size, once per inode.
func (m *Measurer) file(st *unix.Stat_t) int64 {
	if st.Nlink <= 1 {
		return st.Size
	}
	k := quota.KeyOf(st)
	if m.seen[k] {
		return 0
	}
	if m.seen == nil {
		m.seen = map[quota.InoKey]bool{}
	}
	m.seen[k] = true
	return st.Size
}

// Dir counts the entries under the open directory fd (not itself), and
// closes fd.
func (m *Measurer) Dir(fd int) (quota.Count, error) {
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	var u quota.Count
	for {
		if err := m.ctx.Err(); err != nil {
			return u, err
		}
		names, err := f.Readdirnames(256)
		for _, n := range names {
			v, err := m.Entry(fd, n, nil)
			if err == unix.ENOENT {
				continue // gone meanwhile
			}
			u.Add(v)
			if err != nil && err != unix.EACCES {
				return u, err
			}
		}
		if err != nil {
			return u, nil // io.EOF: done
		}
	}
}

// MeasureAt counts name in dirfd and all under it.
func MeasureAt(ctx context.Context, dirfd int, name string) quota.Count {
	u, _ := NewMeasurer(ctx).Entry(dirfd, name, nil)
	return u
}

// isWhiteout says st is an overlay whiteout.
func isWhiteout(st *unix.Stat_t) bool {
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == 0
}

// isMetacopy says the regular file name in dirfd, of stat st, holds only
// the metadata of a lower file.
func isMetacopy(dirfd int, name string, st *unix.Stat_t) bool {
	if st.Size == 0 {
		return false // weighs nothing either way
	}
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	_, err = unix.Fgetxattr(fd, overlay.XattrMetacopy, nil)
	return err == nil
}
