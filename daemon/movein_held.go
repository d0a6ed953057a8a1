package daemon

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"

	"sandfs/core/checkpoint"
	"sandfs/internal/statedir"
	"sandfs/natsout"
)

// errHeldChanged: the held root changed after takeHeld looked.
var errHeldChanged = errors.New("the held root changed while it was taken up")

// resumeHeld takes the sandbox name up on its old root held, unchanged
// since the move (hold.go), and serves that sandbox again: the fleet's
// token and quota written over the state's, its open journal numbered on
// above the fleet's seq (the publisher's cursor with it: nothing it
// numbered below is published), the checkpoint fetched into its store and
// the root restored to it from the tree the move left, then its routes,
// publisher, replicator and schedule back. A failure closes the held
// sandbox; what it changed stays as the steps of reopen would leave it.
// Called with mu held.
func (d *Dir) resumeHeld(ctx context.Context, name string, w fleetWord, hr *heldRoot) (t takenUp, failed error) {
	h := d.h
	sb := hr.e.sb
	defer func() {
		if failed != nil {
			closeHeld(hr.e)
		}
	}()
	fd, _, err := openSandboxState(h.cfg.State, name)
	if err != nil {
		return t, err
	}
	err = h.writeFleetInfo(fd, name, w, statedir.Replace)
	unix.Close(fd)
	if err != nil {
		return t, err
	}
	// Numbered only while the journal holds nothing after the move's
	// checkpoint: one check with the numbering, no event between them.
	var ok bool
	if !checkpoint.Unchanged(sb, hr.cp) {
		return t, errHeldChanged
	}
	if t.numbered, ok = sb.Journal().NumberAbove(w.after, hr.seq); !ok {
		return t, errHeldChanged
	}
	if hist := sb.History(); hist != nil {
		if err := hist.SetMeta(natsout.CursorKey, strconv.FormatUint(t.numbered, 10)); err != nil {
			return t, fmt.Errorf("sandbox %s: %w", name, err)
		}
	}
	t.unchanged = hr.cp
	still := &checkpoint.Still{Checkpoint: hr.cp, Seq: t.numbered}
	if t.fetched, t.res, err = h.fetchAndRestore(ctx, sb, name, w.hd, still); err != nil {
		return t, err
	}
	if err := h.resume(name, hr.e, d.def); err != nil {
		return t, err // closed
	}
	d.served[name] = hr.root
	delete(d.skipped, name)
	h.log.Info("serving sandbox "+name+" of --sandboxes again, its root held since it moved away", "sandbox", name, "root", hr.e.sb.HostRoot())
	t.sb = sb
	return t, nil
}
