package checkpoint

import (
	"fmt"

	"sandfs/core"

	"golang.org/x/sys/unix"
)

// # The checkpoint store's bound
//
// A sandbox's checkpoint store (its objects, on the state filesystem) is
// bounded: Options.CheckpointMaxSize, by default half the size of the
// state filesystem. A checkpoint is refused before it copies a byte when
// the content it would have to store (the allocated bytes of the files it
// must read: holes weigh nothing, and content already stored is counted
// all the same, so the check errs on the side of room) could take the
// store past the bound: ENOSPC, 507 over HTTP, saying the bound and the
// size. So is the checkpoint a restore takes first. Deleting checkpoints
// makes room.

// StoreFullError is a checkpoint refused by the store's bound.
type StoreFullError struct {
	Limit, Stored, Need int64
}

func (e *StoreFullError) Error() string {
	return fmt.Sprintf("the checkpoint store is full: limit %d bytes, %d stored, up to %d more needed; delete checkpoints or raise --checkpoint-max-size",
		e.Limit, e.Stored, e.Need)
}

// Unwrap is ENOSPC: REST answers 507.
func (e *StoreFullError) Unwrap() error { return unix.ENOSPC }

// defaultCheckpointMax is half the size of the filesystem of dir (0 when
// it cannot be told: no bound).
func defaultCheckpointMax(dir string) int64 {
	var fs unix.Statfs_t
	if unix.Statfs(dir, &fs) != nil {
		return 0
	}
	return int64(fs.Blocks) * fs.Bsize / 2
}

// stored is the store's size on disk, walked once after each change (the
// lock is held).
func (h *cpStore) stored() int64 {
	if h.size < 0 {
		if n, err := h.store.Bytes(); err == nil {
			h.size = n
		}
	}
	return max(h.size, 0)
}

// checkBound refuses the checkpoint b is building if what it must read
// could pass the store's bound (the lock is held).
func (b *builder) checkBound() error {
	h := b.h
	if b.store == nil || h.maxBytes <= 0 || b.pendingBytes == 0 {
		return nil
	}
	if stored := h.stored(); stored+b.pendingBytes > h.maxBytes {
		return &StoreFullError{Limit: h.maxBytes, Stored: stored, Need: b.pendingBytes}
	}
	return nil
}

// CheckpointStoreBytes is the sandbox's checkpoint store's size on disk
// and its bound (0: none), for /metrics; ok is false while no checkpoint
// was asked of this sandbox (the store is opened on first use).
func StoreBytes(s *core.Sandbox) (size, limit int64, ok bool) {
	h := refOf(s).ready.Load()
	if h == nil {
		return 0, 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return 0, 0, false
	}
	return h.stored(), h.maxBytes, true
}
