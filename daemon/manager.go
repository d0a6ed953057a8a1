package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/rest"
)

// removeWait bounds how long a removal waits for the sandbox's requests
// in flight.
const removeWait = 10 * time.Second

// errStopping is what a call that would make or take up a sandbox answers
// once DIR is closed (the daemon stopping).
var errStopping = errors.New("the daemon is stopping")

// Create makes DIR/name (0755) and serves it before it returns, so that a
// request right after the answer finds it; the watch's event that follows
// finds it served. q, when not zero, is kept as its quota.json; a zero q
// takes --default-quota. It answers the sandbox's token.
func (d *Dir) Create(ctx context.Context, name string, q core.Quota) (string, error) {
	if err := core.CheckSandboxName(name); err != nil {
		return "", fmt.Errorf("%w: %v", fs.ErrInvalid, err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return "", errStopping
	}
	if sb, _ := d.h.Get(name); sb != nil {
		return "", fmt.Errorf("sandbox %s: %w", name, fs.ErrExist)
	}
	if err := unix.Mkdirat(d.fd, name, 0o755); err != nil {
		if errors.Is(err, unix.EEXIST) {
			return "", fmt.Errorf("sandbox %s: %w", name, fs.ErrExist)
		}
		return "", fmt.Errorf("sandbox %s: %w", name, err)
	}
	if id, err := dirIdentity(d.fd, name); err == nil {
		if err := d.h.adoptState(name, id, rootMarkAt(d.fd, name)); err != nil { // the new directory's state, before its quota
			unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
			return "", err
		}
	}
	if q != (core.Quota{}) {
		if err := keepQuota(d.h.cfg.State, name, q); err != nil {
			unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
			return "", err
		}
	}
	if _, err := d.start(name); err != nil {
		unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR)
		return "", err
	}
	return d.h.Token(name), nil
}

// Fork makes the sandbox name a fork of from at its checkpoint cp (""
// takes one now) and serves it (fork.go); a zero q takes --default-quota.
// A name served, or one of DIR, is fs.ErrExist.
func (d *Dir) Fork(ctx context.Context, name, from, cp string, q core.Quota) (rest.ForkMade, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return rest.ForkMade{}, errStopping
	}
	var st unix.Stat_t
	if core.CheckSandboxName(name) == nil && unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return rest.ForkMade{}, fmt.Errorf("sandbox %s: %w (a directory of %s)", name, fs.ErrExist, d.path)
	}
	if q == (core.Quota{}) {
		q = d.def // --default-quota, as for a sandbox made
	}
	return d.h.Fork(ctx, name, from, cp, q)
}

// ForkOf is the parent and checkpoint of the fork name (fork.go).
func (d *Dir) ForkOf(name string) (from, cp string, ok bool) { return d.h.ForkOf(name) }

// Remove stops serving the sandbox name of DIR (its streams ended, its
// requests finished, its mirror unmounted, its publisher stopped), empties
// its tree through the sandbox, closes it, removes DIR/name and its state
// directory. A fork is discarded (fork.go). A fixed sandbox is
// fs.ErrPermission.
func (d *Dir) Remove(ctx context.Context, name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.h.checkNoForks(name); err != nil {
		return err
	}
	if _, ok := d.served[name]; !ok {
		return d.h.removeNotMade(ctx, name, "one of --sandboxes DIR")
	}
	if err := d.stopServed(name, true); err != nil {
		return fmt.Errorf("sandbox %s: emptying its tree: %w", name, err)
	}
	if err := unix.Unlinkat(d.fd, name, unix.AT_REMOVEDIR); err != nil && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("sandbox %s: removing its directory: %w", name, err)
	}
	if err := removeState(d.h.cfg.State, name); err != nil {
		return fmt.Errorf("sandbox %s: removing its state: %w", name, err)
	}
	return nil
}

// SetQuota sets the sandbox's quota (any sandbox of the host) and keeps it
// as its quota.json.
func (d *Dir) SetQuota(ctx context.Context, name string, q core.Quota) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.h.setQuota(name, q)
}

// Merge merges the fork name into its parent (merge.go).
func (d *Dir) Merge(ctx context.Context, name, into string, o checkpoint.MergeOptions) (string, checkpoint.MergeResult, error) {
	return d.h.Merge(ctx, name, into, o)
}
