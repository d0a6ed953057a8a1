package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"golang.org/x/sys/unix"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/core/history"
	"sandfs/internal/statedir"
	"sandfs/natsout"
	"sandfs/natsout/replicate"
)

// A sandbox moved back to a host that kept its old root (docs/fleet.md,
// "Moving a sandbox"): DIR/NAME is there, not served, and it is this
// sandbox's, its state directory STATE/sandboxes/NAME keeping the
// identity of the checkpoint handed over and the root carrying that mark
// (oldRootOf). Rather than a new root written whole, it is taken up in
// place, under DIR's lock:
//
//  1. the placement's claim, when the daemon has one (Config.Claim);
//  2. the fleet's token and quota written over the state's (as an
//     adoption keeps them), and the journal numbered on above the
//     checkpoint's seq, every lost change's and its own newest
//     (history.NumberAbove: one loss marker at that seq stands for the
//     events the other host numbered, so a cursor on the other host's
//     last seq reads on here, and no seq is given twice);
//  3. the sandbox opened on its root with its state, not served: the
//     checkpoint fetched into its store (only the objects it lacks) and
//     imported (an id the store has already is taken when it is the
//     same checkpoint: a take-up tried again);
//  4. the root restored to the checkpoint (checkpoint.Restore: the
//     before-restore checkpoint finds the root from the tree last seen
//     here, or is that tree when the root was held, watched, and nothing
//     changed it since the move (hold.go); then only what differs is
//     written, each file staged and
//     renamed, and what the checkpoint lacks removed). The restore's
//     changes are journaled, actor restore:<checkpoint>, after the
//     handed seq: the next checkpoint starts from what the journal says,
//     and a reader sees which paths the take-up rewrote (each to what the
//     other host had at that seq). Its undo checkpoint keeps the old
//     root's tree, and a checkpoint of the root as restored (reason
//     move) follows it, so that the newest checkpoint, here and in the
//     fleet, is the tree served; its tree is handed to the sandbox
//     served next (checkpoint.Park), which would read it back otherwise;
//  5. then it is served as any sandbox of DIR.
//
// A failure before the restore changes nothing of the root; one after
// it leaves the root as the restore left it (the undo names the old
// tree) and the name served by no host, the old host's answer saying why.
// Either way this host holds the root back (Dir.heldBack): the lease
// names it, and DIR's next event would serve the root as it is.

// oldRootOf says why DIR/name is not the old root of the sandbox of
// identity id (nil: it is). Called with mu held.
func (d *Dir) oldRootOf(name, id string) error {
	h := d.h
	if !statedir.IsIdentity(id) {
		return errors.New("the sandbox has no identity to know its old root by")
	}
	if _, served := d.served[name]; served || h.isFork(name) {
		return fmt.Errorf("a sandbox %s is served here", name)
	}
	if sb, _ := h.Get(name); sb != nil {
		return fmt.Errorf("a sandbox %s is served here", name)
	}
	if _, isDir := d.stat(name); !isDir {
		return fmt.Errorf("%s in its --sandboxes DIR is not a directory", name)
	}
	if h.cfg.State == "" {
		return errors.New("the daemon keeps no state")
	}
	fd, err := unix.Open(statedir.Sandbox(h.cfg.State, name), unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("no state of sandbox %s is kept here", name)
	}
	kept, err := statedir.ReadIdentity(fd)
	unix.Close(fd)
	if err != nil || kept != id {
		return fmt.Errorf("the state kept under %s is another sandbox's", name)
	}
	if mark := rootMarkAt(d.fd, name); mark != id {
		return fmt.Errorf("%s in its --sandboxes DIR is not marked as this sandbox's root", name)
	}
	return nil
}

// holdsName reports whether DIR holds something named name.
func (d *Dir) holdsName(name string) bool {
	var st unix.Stat_t
	return unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil
}

// takeUpInPlace takes the sandbox name up on its old root DIR/name from
// the fleet's checkpoint cp, and serves it.
func (d *Dir) takeUpInPlace(ctx context.Context, name, cp string) (api.SandboxAdopted, error) {
	var out api.SandboxAdopted
	h := d.h
	if err := d.takesIn(); err != nil {
		return out, err
	}
	ctx, cancel := context.WithTimeout(ctx, adoptWait)
	defer cancel()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return out, errStopping
	}
	done := false
	defer func() {
		if !done {
			// The lease names this host: DIR's next event would serve
			// what DIR holds under the name as it is, neither the
			// checkpoint's tree nor, maybe, this sandbox's.
			d.heldBack[name] = true
		}
	}()
	w, err := h.fleetHeader(ctx, name, cp)
	if err != nil {
		return out, err
	}
	hd := w.hd
	if err := d.oldRootOf(name, hd.Identity); err != nil {
		return out, fmt.Errorf("its --sandboxes DIR holds %s, not this sandbox's old root (%v): %w", name, err, fs.ErrExist)
	}
	undo, err := h.claim(ctx, name)
	if err != nil {
		return out, err
	}
	defer func() {
		if !done {
			undo()
		}
	}()
	if err := h.readRest(ctx, &w, name); err != nil {
		return out, err
	}
	var t takenUp
	err = errHeldChanged
	if hr := d.takeHeld(name); hr != nil {
		t, err = d.resumeHeld(ctx, name, w, hr)
	}
	if errors.Is(err, errHeldChanged) { // not held, or closed now
		t, err = d.reopen(ctx, name, w)
	}
	if err != nil {
		return out, err
	}
	h.waitWatched(ctx, t.sb, name, "the sandbox") // as an adoption's
	done = true
	h.log.Info("took sandbox "+name+" up on its old root", "sandbox", name, "checkpoint", hd.ID, "seq", hd.Seq,
		"from", t.fetched.Host, "objects", t.fetched.Objects, "bytes", t.fetched.Bytes, "written", len(t.res.Written),
		"removed", len(t.res.Removed), "undo", t.res.Undo, "unchanged_since", t.unchanged, "lost", len(w.lost), "numbering_after", t.numbered)
	return h.adopted(name, t.sb, w, t.fetched), nil
}

// takenUp is what a take-up on the old root did.
type takenUp struct {
	sb        *core.Sandbox // served
	fetched   replicate.Fetched
	res       checkpoint.RestoreResult
	unchanged string // the checkpoint the root was still, held (hold.go)
	numbered  uint64 // the seq the journal numbers after
}

// reopen takes the sandbox name up on its old root, not held: its state
// kept (keepState), the root restored by a sandbox opened for it alone
// (restoreRoot), then served anew. Called with mu held.
func (d *Dir) reopen(ctx context.Context, name string, w fleetWord) (takenUp, error) {
	var t takenUp
	statePath, numbered, err := d.h.keepState(name, w)
	if err != nil {
		return t, err
	}
	t.numbered = numbered
	if t.fetched, t.res, err = d.restoreRoot(ctx, name, statePath, w.hd); err != nil {
		return t, err
	}
	t.sb, err = d.start(name)
	return t, err
}

// keepState keeps the state of the sandbox name taken up on its old
// root: the fleet's token and quota written over its own, its journal
// numbered on above seq. It answers the state's path and the seq the
// journal numbers after.
func (h *Host) keepState(name string, w fleetWord) (string, uint64, error) {
	fd, path, err := openSandboxState(h.cfg.State, name)
	if err != nil {
		return path, 0, err
	}
	defer unix.Close(fd)
	if err := h.writeFleetInfo(fd, name, w, statedir.Replace); err != nil {
		return path, 0, err
	}
	n, err := history.NumberAbove(path, w.after, h.log, natsout.CursorKey)
	if err != nil {
		return path, 0, fmt.Errorf("sandbox %s: %w", name, err)
	}
	return path, n, nil
}

// restoreRoot fetches the fleet's checkpoint hd into the store of the
// sandbox name, opened on DIR/name with its state but not served, and
// restores the root to it. Called with mu held.
func (d *Dir) restoreRoot(ctx context.Context, name, statePath string, hd replicate.Checkpoint) (replicate.Fetched, checkpoint.RestoreResult, error) {
	o := d.h.cfg.Options
	o.StateDir = statePath
	sb, err := core.OpenAt(d.fd, name, filepath.Join(d.path, name), name, o)
	if err != nil {
		return replicate.Fetched{}, checkpoint.RestoreResult{}, err
	}
	defer sb.Close()
	fetched, res, err := d.h.fetchAndRestore(ctx, sb, name, hd, nil)
	if err == nil {
		checkpoint.Park(sb) // the sandbox served next starts from that tree
	}
	return fetched, res, err
}

// fetchAndRestore fetches the fleet's checkpoint hd into the store of sb,
// the sandbox name's on its old root, and restores the root to it;
// unchanged, when set, is the checkpoint the root is known to be still
// (hold.go).
func (h *Host) fetchAndRestore(ctx context.Context, sb *core.Sandbox, name string, hd replicate.Checkpoint, unchanged *checkpoint.Still) (replicate.Fetched, checkpoint.RestoreResult, error) {
	var res checkpoint.RestoreResult
	fetched, err := h.cfg.Replicator.Fleet().Fetch(ctx, name, hd.ID, sb)
	switch {
	case errors.Is(err, fs.ErrExist):
		// Imported by a take-up tried before: the same checkpoint, or refused.
		have, berr := checkpoint.ByID(sb, hd.ID)
		if berr != nil || have.Seq != hd.Seq || have.Files != hd.Files || have.Dirs != hd.Dirs ||
			have.Symlinks != hd.Symlinks || have.Bytes != hd.Bytes {
			return fetched, res, fmt.Errorf("checkpoint %s: the store holds another checkpoint of that id: refused", hd.ID)
		}
	case err != nil:
		return fetched, res, err
	case fetched.Checkpoint.Seq != hd.Seq:
		// The journal was numbered after the header's seq: a manifest that
		// changed since it was read is not the one the journal follows.
		return fetched, res, fmt.Errorf("checkpoint %s: its manifest changed in the fleet while it was taken up (seq %d, then %d): refused", hd.ID, hd.Seq, fetched.Checkpoint.Seq)
	}
	res, err = checkpoint.Restore(ctx, sb, checkpoint.RestoreOptions{Checkpoint: hd.ID, Unchanged: unchanged})
	if err != nil {
		return fetched, res, fmt.Errorf("restoring the old root to checkpoint %s: %w", hd.ID, err)
	}
	if n := len(res.Skipped); n > 0 {
		s := res.Skipped[0]
		return fetched, res, fmt.Errorf("restoring the old root to checkpoint %s left %d paths as they were (%s: %s); checkpoint %s holds the root as it was before",
			hd.ID, n, s.Path, s.Reason, res.Undo)
	}
	// The undo is the newest checkpoint now, at the handed seq: the fleet
	// would take the sandbox up again from the old root's tree. One of
	// the root as restored, after the restore's events, is newer: built
	// from the undo and those events (the restore's writes are all that
	// changed since its walk; what an outside writer did meanwhile, the
	// start's comparison journals after it, or the watch of a held root).
	if _, err := checkpoint.Create(ctx, sb, checkpoint.Options{Reason: ReasonMove, Name: "taken up from checkpoint " + hd.ID, FromJournal: true}); err != nil {
		return fetched, res, fmt.Errorf("the checkpoint after the restore: %w", err)
	}
	return fetched, res, nil
}
