package core

import (
	"context"

	"golang.org/x/sys/unix"

	"sandfs/core/du"
	"sandfs/core/quota"
)

// A sandbox's usage against its bound is the quota package's; core opens
// and walks the tree for it (core/du, on the confined stats of
// internal/xdev) and tells it every change it makes (quota.Op).

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
		Count:   func(ctx context.Context, fd int) (quota.Count, error) { return du.NewMeasurer(ctx).Dir(fd) },
		Refusal: refusal,
	}
	if s.upper != nil {
		// A fork counts what it wrote: its upper, as the overlay keeps
		// it. The Ops see the merged tree, so a scan after each settles
		// what they could not see (core/quota, "Forks").
		t.Open = s.upper
		t.Count = func(ctx context.Context, fd int) (quota.Count, error) {
			m := du.NewMeasurer(ctx)
			m.Upper = true
			return m.Dir(fd)
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
