package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/core/history"
	"sandfs/internal/statedir"
	"sandfs/natsout"
	"sandfs/natsout/replicate"
)

// Adoption takes a sandbox up on this host from the fleet (docs/fleet.md,
// "Taking a sandbox up from the fleet"): the host that served it may be
// gone, and what it replicated (--replicate) is what is left. Under DIR's
// lock, so nothing of DIR starts the name meanwhile:
//
//  1. the placement's claim, when the daemon has one (Config.Claim);
//  2. the fleet's checkpoint's header (the newest unless named), the
//     sandbox's token and quota from its KV, and the stream's events of
//     the sandbox after the checkpoint's seq (the lost changes);
//  3. its state directory, new (a state left under the name is archived,
//     as a fork's): the token and quota, and a journal begun after the
//     checkpoint's seq and every lost change's (history.Begin: no seq the
//     fleet heard of is numbered again);
//  4. DIR/NAME, empty, opened as a sandbox that is not served yet: the
//     checkpoint is fetched into its store (replicate's Fetch: only the
//     objects it lacks, each checked), and its tree written into the root
//     (checkpoint.CopyTree: modes, owners, times, symlinks, empty
//     directories), unjournaled, since nothing serves it;
//  5. then it is served as any sandbox of DIR, its kernel watch placed
//     from the checkpoint's directories (core.Options.Made).
//
// A failure undoes it all: the root and the state go, the claim is given
// back.

// adoptWait bounds an adoption, the fetch of the tree included.
const adoptWait = 10 * time.Minute

// lostBefore is how long before the checkpoint's time the stream is read
// from: an event after its seq may reach the broker before the checkpoint
// was written (its walk runs meanwhile), and the hosts' clocks differ.
const lostBefore = time.Hour

// maxLost bounds the lost changes answered.
const maxLost = 10_000

// Claim takes the placement of the sandbox name for this host before it
// is taken up (nil: the daemon keeps none); undo gives it back when the
// adoption fails.
type Claim func(ctx context.Context, name string) (undo func(), err error)

var errNotInFleet = fmt.Errorf("taking a sandbox up needs the fleet's checkpoints (serve --replicate) and the daemon's state: %w", errors.ErrUnsupported)

// Adopt makes the sandbox name of DIR from the fleet's checkpoint cp of
// it ("": the newest) and serves it.
func (d *Dir) Adopt(ctx context.Context, name, cp string) (api.SandboxAdopted, error) {
	var out api.SandboxAdopted
	h := d.h
	if err := core.CheckSandboxName(name); err != nil {
		return out, fmt.Errorf("%w: %v", fs.ErrInvalid, err)
	}
	if h.cfg.Replicator == nil || h.cfg.State == "" || !h.cfg.History {
		return out, errNotInFleet
	}
	ctx, cancel := context.WithTimeout(ctx, adoptWait)
	defer cancel()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return out, errors.New("the daemon is stopping")
	}
	var st unix.Stat_t
	if sb, _ := h.Get(name); sb != nil || h.isFork(name) || unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return out, fmt.Errorf("sandbox %s: %w", name, fs.ErrExist)
	}
	done := false
	if h.cfg.Claim != nil {
		undo, err := h.cfg.Claim(ctx, name)
		if err != nil {
			return out, fmt.Errorf("sandbox %s: its placement: %w", name, err)
		}
		defer func() {
			if !done && undo != nil {
				undo()
			}
		}()
	}
	fleet := h.cfg.Replicator.Fleet()
	hd, err := fleet.Header(ctx, name, cp)
	if err != nil {
		return out, err
	}
	info, hasInfo, err := fleet.Info(ctx, name)
	if err != nil {
		return out, err
	}
	lost, truncated, after, err := h.lostAfter(ctx, fleet, name, hd)
	if err != nil {
		return out, err
	}

	defer func() {
		if !done {
			_ = core.RemoveAllAt(context.WithoutCancel(ctx), d.fd, name)
			_ = removeState(h.cfg.State, name)
		}
	}()
	statePath, err := h.newState(name, info, hasInfo, after)
	if err != nil {
		return out, err
	}
	if err := unix.Mkdirat(d.fd, name, 0o700); err != nil {
		return out, fmt.Errorf("sandbox %s: %w", name, err)
	}
	id, err := dirIdentity(d.fd, name)
	if err == nil {
		err = h.adoptState(name, id)
	}
	if err != nil {
		return out, err
	}
	fetched, dirs, err := d.writeTree(ctx, name, statePath, hd.ID)
	if err != nil {
		return out, err
	}
	sb, err := d.startMade(name, dirs)
	if err != nil {
		return out, err
	}
	select { // as a fork's: answered once its kernel watch hears the whole tree
	case <-sb.Watch().Ready():
	case <-ctx.Done():
	case <-time.After(watchReadyWait):
		h.log.Warn("the adopted sandbox's kernel watch is not ready after 30s; answering anyway", "sandbox", name)
	}
	done = true
	h.log.Info("took sandbox "+name+" up from the fleet", "sandbox", name, "checkpoint", hd.ID, "seq", hd.Seq,
		"from", fetched.Host, "objects", fetched.Objects, "bytes", fetched.Bytes, "lost", len(lost), "numbering_after", after)
	q := sb.Quota().Bound()
	return api.SandboxAdopted{Name: name, Token: h.Token(name), Quota: api.Sizes{Bytes: q.Bytes, Entries: q.Entries},
		Checkpoint: hd.ID, Seq: hd.Seq, From: fetched.Host, Fetched: api.Fetched{Objects: fetched.Objects, Bytes: fetched.Bytes},
		Lost: lost, Truncated: truncated}, nil
}

// lostAfter reads the stream's events of name after the checkpoint hd
// (on the --events broker when there is one, else the --replicate one),
// and answers them with the seq the new journal numbers after.
func (h *Host) lostAfter(ctx context.Context, fleet *replicate.Fleet, name string, hd replicate.Checkpoint) ([]api.Lost, bool, uint64, error) {
	js := fleet.JetStream()
	if h.cfg.Events != nil {
		js = h.cfg.Events.JetStream()
	}
	msgs, truncated, err := natsout.After(ctx, js, name, hd.Seq, hd.Created.Add(-lostBefore), maxLost)
	if err != nil {
		return nil, false, 0, err
	}
	after := hd.Seq
	lost := make([]api.Lost, 0, len(msgs))
	for _, m := range msgs {
		after = max(after, m.Seq)
		lost = append(lost, api.Lost{Seq: m.Seq, Type: m.Type, Path: m.Path, OldPath: m.OldPath, Host: m.Host, Time: m.Timestamp})
	}
	return lost, truncated, after, nil
}

// newState makes the state directory of the sandbox taken up: a state
// left under the name archived, the fleet's token and quota kept, and a
// journal that numbers on after seq. It answers the directory's path.
func (h *Host) newState(name string, info replicate.Info, hasInfo bool, seq uint64) (string, error) {
	path := statedir.Sandbox(h.cfg.State, name)
	var st unix.Stat_t
	if unix.Lstat(path, &st) == nil {
		if err := h.archiveState(name); err != nil {
			return path, err
		}
	}
	fd, path, err := openSandboxState(h.cfg.State, name)
	if err != nil {
		return path, err
	}
	defer unix.Close(fd)
	if hasInfo && info.Token != "" && h.cfg.Tokens {
		if err := statedir.Publish(fd, statedir.TokenFile, info.Token+"\n"); err != nil {
			return path, fmt.Errorf("sandbox %s: its token: %w", name, err)
		}
	}
	if hasInfo && info.Quota != (replicate.InfoQuota{}) {
		if err := writeQuota(fd, core.Quota{Bytes: info.Quota.Bytes, Entries: info.Quota.Entries}); err != nil {
			return path, fmt.Errorf("sandbox %s: %w", name, err)
		}
	}
	if err := history.Begin(path, seq, h.log); err != nil {
		return path, fmt.Errorf("sandbox %s: %w", name, err)
	}
	return path, nil
}

// writeTree fetches the fleet's checkpoint id of name into its store and
// writes its tree into DIR/name, through the sandbox opened on it but not
// served (so nothing is journaled); it answers the tree's directories.
// Called with mu held.
func (d *Dir) writeTree(ctx context.Context, name, statePath, id string) (replicate.Fetched, map[string][]string, error) {
	o := d.h.cfg.Options
	o.StateDir = statePath
	o.Made = map[string][]string{"/": nil} // an empty root: nothing to sweep
	sb, err := core.OpenAt(d.fd, name, filepath.Join(d.path, name), name, o)
	if err != nil {
		return replicate.Fetched{}, nil, err
	}
	defer sb.Close()
	fetched, err := d.h.cfg.Replicator.Fleet().Fetch(ctx, name, id, sb)
	if err != nil {
		return fetched, nil, err
	}
	rfd, err := unix.Openat(d.fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fetched, nil, err
	}
	defer unix.Close(rfd)
	if _, err := checkpoint.CopyTree(ctx, sb, id, rfd); err != nil {
		return fetched, nil, err
	}
	dirs, err := checkpoint.Dirs(sb, id)
	return fetched, dirs, err
}
