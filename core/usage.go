package core

import (
	"context"
	"os"

	"golang.org/x/sys/unix"

	"sandfs/core/quota"
	"sandfs/internal/overlay"
)

// A sandbox's usage against its bound is the quota package's; core opens
// and walks the tree for it (the measurer below, on the confined stats of
// xdev.go) and tells it every change it makes (quota.Op).

// Quota bounds one sandbox (quota.Quota).
type Quota = quota.Quota

// Usage is what a sandbox holds, against its quota (quota.Usage).
type Usage = quota.Usage

// QuotaError says which bound a change would pass (quota.Error).
type QuotaError = quota.Error

// ErrQuota is what every quota refusal is (errors.Is); it is ENOSPC too.
var ErrQuota = quota.ErrQuota

// newQuota is the usage state of s, bounded by q: on its root, or on the
// overlay's upper when upper opens one (Options.Upper).
func (s *Sandbox) newQuota(q Quota, upper func() (int, error), refusal func() error) *quota.State {
	t := quota.Tree{
		Open: func() (int, error) {
			return unix.Openat(s.root.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		},
		Count:   func(ctx context.Context, fd int) (quota.Count, error) { return newMeasurer(ctx).dir(fd) },
		Refusal: refusal,
	}
	if upper != nil {
		// A fork counts what it wrote: its upper, as the overlay keeps
		// it. The Ops see the merged tree, so a scan after each settles
		// what they could not see (core/quota, "Forks").
		t.Open = upper
		t.Count = func(ctx context.Context, fd int) (quota.Count, error) {
			m := newMeasurer(ctx)
			m.upper = true
			return m.dir(fd)
		}
		t.Approx = true
	}
	return quota.New(q, t)
}

// Quota is the sandbox's bound and usage: what it holds, the scans that
// correct the counts, and the Ops of the operations that change them.
func (s *Sandbox) Quota() *quota.State { return s.quota }

// reserveEntry reserves the one entry a new name in dirfd adds. Refused,
// the operation ends, and the error is EEXIST when the name is taken (what
// the call would have answered under no quota), else the quota's.
func reserveEntry(uop *quota.Op, dirfd int, name, op, ap string) error {
	if err := uop.Reserve(op, ap, 0, 1); err != nil {
		uop.End(0, 0)
		return refusedUnlessExists(dirfd, name, op, ap, err)
	}
	return nil
}

// measurer walks subtrees by fd and counts them the way usage does: each
// regular file's inode once (seen holds the inodes with more than one
// link met so far).
type measurer struct {
	ctx   context.Context
	seen  map[quota.InoKey]bool
	upper bool // the tree is an overlay's upper: isWhiteout and isMetacopy weigh its bookkeeping
}

func newMeasurer(ctx context.Context) *measurer { return &measurer{ctx: ctx} }

// entry counts name in dirfd (described by st when not nil) and all under it.
func (m *measurer) entry(dirfd int, name string, st *unix.Stat_t) (quota.Count, error) {
	var own unix.Stat_t
	if st == nil {
		if _, err := LstatAt(dirfd, name, &own); err != nil {
			return quota.Count{}, err
		}
		st = &own
	}
	if m.upper && isWhiteout(st) {
		return quota.Count{}, nil
	}
	u := quota.Count{Entries: 1}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFREG:
		if !m.upper || !isMetacopy(dirfd, name, st) {
			u.Bytes = m.file(st)
		}
	case unix.S_IFDIR:
		fd, err := OpenSubdir(dirfd, name)
		if err == unix.EXDEV {
			return u, nil // another mount: not the root's (xdev.go)
		}
		if err != nil {
			return u, err
		}
		in, err := m.dir(fd)
		u.Add(in)
		return u, err
	}
	return u, nil
}

// file is what the regular file of stat st adds: its size, once per inode.
func (m *measurer) file(st *unix.Stat_t) int64 {
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

// dir counts the entries under the open directory fd (not itself), and
// closes fd.
func (m *measurer) dir(fd int) (quota.Count, error) {
	f := os.NewFile(uintptr(fd), ".")
	defer f.Close()
	var u quota.Count
	for {
		if err := m.ctx.Err(); err != nil {
			return u, err
		}
		names, err := f.Readdirnames(256)
		for _, n := range names {
			v, err := m.entry(fd, n, nil)
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

// In an overlay's upper (a fork's, counted by Options.Upper) some names
// are the overlay's bookkeeping rather than content the sandbox wrote:
//
//   - A whiteout (a character device 0:0) marks a lower name deleted. It
//     weighs nothing, no bytes and no entry: it takes a name away from the
//     sandbox's tree, and there are never more of them than the lower's
//     names, which count once, against the state's bound.
//   - A metacopy file (trusted.overlay.metacopy: a chmod, chown or touch
//     of a lower file copied up its metadata only) is an entry of no
//     bytes: its data is still the lower's, though its size is the
//     lower's. Only the xattr tells it from a file the sandbox wrote (its
//     blocks may be an xattr block's), so the walk asks each regular file
//     of a size.
//   - An opaque directory (one the sandbox made where a lower one was
//     removed) and a directory copied up to hold a changed name are
//     entries like any directory the upper holds.

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

// measureAt counts name in dirfd and all under it.
func measureAt(ctx context.Context, dirfd int, name string) quota.Count {
	u, _ := newMeasurer(ctx).entry(dirfd, name, nil)
	return u
}
