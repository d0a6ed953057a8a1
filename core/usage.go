package core

import (
	"context"
	"os"

	"golang.org/x/sys/unix"

	"sandfs/core/quota"
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
// overlay's upper when it has one (Options.Upper).
func (s *Sandbox) newQuota(q Quota, refusal func() error) *quota.State {
	t := quota.Tree{
		Open: func() (int, error) {
			return unix.Openat(s.root.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		},
		Count:   func(ctx context.Context, fd int) (quota.Count, error) { return newMeasurer(ctx).dir(fd) },
		Refusal: refusal,
	}
	if s.upper != nil {
		// A fork counts what it wrote: its upper, as the overlay keeps
		// it. The Ops see the merged tree, so a scan after each settles
		// what they could not see (core/quota, "Forks").
		t.Open = s.upper
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
	upper bool // the tree is an overlay's upper: its bookkeeping weighs as usage_upper.go says
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

// measureAt counts name in dirfd and all under it.
func measureAt(ctx context.Context, dirfd int, name string) quota.Count {
	u, _ := newMeasurer(ctx).entry(dirfd, name, nil)
	return u
}
