package core

import (
	"sync/atomic"
	"time"
)

// # Quotas
//
// A sandbox may be bounded in bytes and in entries (files, directories,
// symlinks and the rest). The bound holds alike for every way of writing
// through the daemon: REST writes, uploads, tar extraction and the FUSE
// mirror. A write past it fails with ENOSPC (errors.Is(err, unix.ENOSPC)
// and errors.Is(err, ErrQuota)), and the old content is kept.
//
// Usage is kept from the journal, not by walking the tree per write, and
// corrected by a periodic scan.

// Quota bounds one sandbox. A zero field is no bound.
type Quota struct {
	Bytes   int64 // the sum of the regular files' sizes
	Entries int64 // every name in the tree but the root
}

// Usage is what a sandbox holds now, against its quota.
type Usage struct {
	Bytes     int64
	Entries   int64
	Quota     Quota
	ScannedAt time.Time // the last scan that corrected the counts (zero: none yet)
}

// quotaState is the sandbox's bound and counts.
type quotaState struct {
	bytes, entries atomic.Int64 // Quota
}

// SetQuota sets the sandbox's bound (a zero Quota: none). It applies to
// the writes that start after it.
func (s *Sandbox) SetQuota(q Quota) {
	s.quota.bytes.Store(q.Bytes)
	s.quota.entries.Store(q.Entries)
}

// Quota is the sandbox's bound.
func (s *Sandbox) Quota() Quota {
	return Quota{Bytes: s.quota.bytes.Load(), Entries: s.quota.entries.Load()}
}

// Usage is what the sandbox holds, against its quota.
func (s *Sandbox) Usage() Usage {
	return Usage{Quota: s.Quota()}
}
