package daemon

import (
	"context"
	"fmt"
	"time"

	"sandfs/api"
	"sandfs/core"
	"sandfs/internal/statedir"
	"sandfs/natsout/replicate"
)

// What a take-up from the fleet does the same whether it writes a new
// root (adopt.go) or restores the old one in place (movein_inplace.go):
// the placement's claim, the fleet's word on the checkpoint, the
// sandbox's token and quota, the events heard after it, and the answer
// once the sandbox's kernel watch hears its whole tree.

// fleetWord is what the fleet says of a sandbox taken up: its checkpoint
// and, read after the claim, its token and quota and the changes the
// stream heard after the checkpoint (lost, numbered up to after).
type fleetWord struct {
	fleet     *replicate.Fleet
	hd        replicate.Checkpoint
	info      replicate.Info
	hasInfo   bool
	lost      []api.Lost
	truncated bool
	after     uint64
}

// fleetHeader reads the fleet's checkpoint cp of name ("" its newest),
// refusing a seq no journal could have reached.
func (h *Host) fleetHeader(ctx context.Context, name, cp string) (fleetWord, error) {
	w := fleetWord{fleet: h.cfg.Replicator.Fleet()}
	hd, err := w.fleet.Header(ctx, name, cp)
	if err != nil {
		return w, err
	}
	if hd.Seq > maxSeq {
		return w, fmt.Errorf("sandbox %s: the fleet's checkpoint %s claims seq %d: refused", name, hd.ID, hd.Seq)
	}
	w.hd = hd
	return w, nil
}

// readRest reads the sandbox's token and quota and the events after the
// checkpoint into w.
func (h *Host) readRest(ctx context.Context, w *fleetWord, name string) error {
	var err error
	if w.info, w.hasInfo, err = w.fleet.Info(ctx, name); err != nil {
		return err
	}
	w.lost, w.truncated, w.after, err = h.lostAfter(ctx, w.fleet, name, w.hd)
	return err
}

// claim takes the placement's claim of name (Config.Claim; none: a no-op)
// and answers its undo.
func (h *Host) claim(ctx context.Context, name string) (func(), error) {
	if h.cfg.Claim == nil {
		return func() {}, nil
	}
	undo, err := h.cfg.Claim(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: its placement: %w", name, err)
	}
	if undo == nil {
		undo = func() {}
	}
	return undo, nil
}

// writeFleetInfo writes the fleet's token and quota of name into its
// state directory fd, each by put (statedir.Publish into a new state,
// statedir.Replace over a kept one).
func (h *Host) writeFleetInfo(fd int, name string, w fleetWord, put func(dirfd int, file, data string) error) error {
	if w.hasInfo && w.info.Token != "" && h.cfg.Tokens {
		if err := put(fd, statedir.TokenFile, w.info.Token+"\n"); err != nil {
			return fmt.Errorf("sandbox %s: its token: %w", name, err)
		}
	}
	if w.hasInfo && w.info.Quota != (replicate.InfoQuota{}) {
		if err := writeQuota(fd, core.Quota{Bytes: w.info.Quota.Bytes, Entries: w.info.Quota.Entries}); err != nil {
			return fmt.Errorf("sandbox %s: %w", name, err)
		}
	}
	return nil
}

// waitWatched waits (watchReadyWait at most, or ctx) until sb's kernel
// watch has walked its whole tree: a process writing the root after the
// answer is then heard. what names the sandbox in the log.
func (h *Host) waitWatched(ctx context.Context, sb *core.Sandbox, name, what string) {
	select {
	case <-sb.Watch().Ready():
	case <-ctx.Done():
	case <-time.After(watchReadyWait):
		h.log.Warn(what+"'s kernel watch is not ready after 30s; answering anyway", "sandbox", name)
	}
}

// adopted is the answer of a take-up of name, served as sb.
func (h *Host) adopted(name string, sb *core.Sandbox, w fleetWord, fetched replicate.Fetched) api.SandboxAdopted {
	q := sb.Quota().Bound()
	return api.SandboxAdopted{Name: name, Token: h.Token(name), Quota: api.Sizes{Bytes: q.Bytes, Entries: q.Entries},
		Checkpoint: w.hd.ID, Seq: w.hd.Seq, From: fetched.Host, Fetched: api.Fetched{Objects: fetched.Objects, Bytes: fetched.Bytes},
		Lost: w.lost, Truncated: w.truncated}
}
