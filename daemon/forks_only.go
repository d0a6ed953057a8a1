package daemon

import (
	"context"
	"fmt"
	"io/fs"
	"strings"
	"sync"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/rest"
)

// forksOnly is the Manager of a daemon that keeps state but was given no
// --sandboxes DIR: forks need no directory of their own (they live in the
// state), so it makes, merges and discards them, and sets any sandbox's
// quota; a plain sandbox it cannot make (rest.ErrNoSandboxDir).
type forksOnly struct {
	h   *Host
	def core.Quota // --default-quota, a fork's when it asks none
	mu  sync.Mutex // one fork, discard or quota change at a time, as Dir's
}

func (m *forksOnly) Create(context.Context, string, core.Quota) (string, error) {
	return "", rest.ErrNoSandboxDir
}

func (m *forksOnly) Remove(ctx context.Context, name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.h.checkNoForks(name); err != nil {
		return err
	}
	return m.h.removeNotMade(ctx, name, "a fork")
}

func (m *forksOnly) SetQuota(ctx context.Context, name string, q core.Quota) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.h.setQuota(name, q)
}

func (m *forksOnly) Fork(ctx context.Context, name, from, cp string, q core.Quota) (rest.ForkMade, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if q == (core.Quota{}) {
		q = m.def
	}
	return m.h.Fork(ctx, name, from, cp, q)
}

func (m *forksOnly) Merge(ctx context.Context, name, into string, o checkpoint.MergeOptions) (string, checkpoint.MergeResult, error) {
	return m.h.Merge(ctx, name, into, o)
}

func (m *forksOnly) ForkOf(name string) (from, cp string, ok bool) { return m.h.ForkOf(name) }

// checkNoForks refuses to remove a sandbox forks read.
func (h *Host) checkNoForks(name string) error {
	if forks := h.forksOf(name); len(forks) > 0 {
		return fmt.Errorf("sandbox %s: %w (%s)", name, errHasForks, strings.Join(forks, ", "))
	}
	return nil
}

// removeNotMade removes name, a sandbox no Manager's directory made: a
// fork is discarded; any other served (the default, a --sandbox) is not
// the Manager's to remove, what the Manager makes being made.
func (h *Host) removeNotMade(ctx context.Context, name, made string) error {
	if h.isFork(name) {
		return h.Discard(ctx, name)
	}
	if _, fixed := h.Get(name); fixed {
		return fmt.Errorf("sandbox %s is not %s: %w", name, made, fs.ErrPermission)
	}
	return fmt.Errorf("sandbox %s: %w", name, fs.ErrNotExist)
}

// setQuota sets the served sandbox name's quota and keeps it as its
// quota.json.
func (h *Host) setQuota(name string, q core.Quota) error {
	if q.Bytes < 0 || q.Entries < 0 {
		return fmt.Errorf("%w: a negative bound", fs.ErrInvalid)
	}
	sb, _ := h.Get(name)
	if sb == nil {
		return fmt.Errorf("sandbox %s: %w", name, fs.ErrNotExist)
	}
	if err := keepQuota(h.cfg.State, h.stateKey(name), q); err != nil {
		return err
	}
	sb.Quota().Set(q)
	if h.cfg.Replicator != nil {
		h.describe(name, h.Token(name), q)
	}
	return nil
}
