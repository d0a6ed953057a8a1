package daemon

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"sandfs/api"
	"sandfs/core/checkpoint"
	"sandfs/natsout/placement"
	"sandfs/natsout/replicate"
	"sandfs/rest"
)

// # Moving a sandbox to another host (docs/fleet.md, "Moving a sandbox")
//
// Dir.Move runs on the host serving the sandbox (A); the new host (B)
// pulls it from the fleet, so the hosts need no token of each other's:
//
//  1. B is asked first whether it takes the sandbox in (placement.Ping):
//     no daemon of that name (400), or one without --replicate, or whose
//     --sandboxes DIR holds the name already as anything but this
//     sandbox's old root (409: the Ping names the sandbox's identity),
//     refuses the move before anything changed.
//  2. A marks the lease "moving" (other hosts answer 503), refuses every
//     write to the sandbox (rest.Registry.GateWrites: 503 Retry-After,
//     reads still served) and waits for the writes let in, unmounts its
//     mirrors, waits for the replicator to have sent what was made
//     before, takes a last checkpoint (reason "move"), and waits until
//     its manifest is in the fleet and the publisher has published every
//     event the journal holds. A failure here undoes it all: the sandbox
//     is served as before (its --mount-all mirror mounted again).
//  3. The lease is handed to B with the checkpoint (placement.Handoff),
//     and A stops serving the sandbox; its root and state stay on A's
//     disk, untouched (its lease being B's now, the stop deletes nothing),
//     the root still watched for a while (hold.go).
//  4. B hears of it (movein.go), takes the sandbox up from that
//     checkpoint (Dir.Adopt; or, on the old root it kept,
//     takeUpInPlace), serves it, and notes what it fetched in the
//     lease; A answers once the lease says B serves it (at most moveWait;
//     a refusal of B is 502, the bound passed 504: the lease then stays
//     "moving" to B, for the operator).

const (
	// moveWait bounds the wait for the new host to serve the sandbox: as
	// long as its take-up may run (adoptWait: a large tree's fetch and
	// write take minutes), and a minute more.
	moveWait = adoptWait + time.Minute
	// writesWait bounds the wait for the writes let in before the gate.
	writesWait = 30 * time.Second
	// fleetWait bounds each wait on the broker: the replicator (while it
	// sends nothing: a large tree's first send takes longer), the
	// publisher.
	fleetWait = time.Minute
	// movePoll is how often a wait looks again.
	movePoll = 50 * time.Millisecond
)

// ReasonMove is the reason of a move's last checkpoint.
const ReasonMove = "move"

func moveErr(status int, format string, a ...any) error {
	return &rest.MoveError{Status: status, Msg: fmt.Sprintf(format, a...)}
}

// Move moves the sandbox name of DIR to the host named to.
func (d *Dir) Move(ctx context.Context, name, to string) (api.SandboxMoved, error) {
	var out api.SandboxMoved
	h := d.h
	l := h.cfg.Placement
	if l == nil || h.cfg.Replicator == nil || h.cfg.State == "" || !h.cfg.History {
		return out, moveErr(http.StatusNotImplemented, "moving a sandbox needs --placement, --replicate and the daemon's state (the journal kept)")
	}
	if to == l.Host() {
		return out, moveErr(http.StatusBadRequest, "sandbox %s is served by host %s already", name, to)
	}
	if err := d.beginMove(name); err != nil {
		return out, err
	}
	defer d.endMove(name)
	e := h.entryOf(name)
	if e == nil {
		return out, moveErr(http.StatusNotFound, "sandbox %s is not served here", name)
	}
	var refused *placement.RefusedError
	if err := l.Ping(ctx, to, name, e.sb.Identity()); errors.Is(err, placement.ErrNoHost) {
		return out, moveErr(http.StatusBadRequest, "no daemon answers as host %s on the placement's broker (its --events-host, with --placement and --sandboxes DIR); nothing was changed", to)
	} else if errors.As(err, &refused) {
		return out, moveErr(http.StatusConflict, "%v; nothing was changed", err)
	} else if err != nil {
		return out, moveErr(http.StatusBadRequest, "%v; nothing was changed", err)
	}
	start := time.Now()
	cp, sent, err := d.freeze(ctx, name, to, e)
	if err != nil {
		return out, err
	}
	err = l.Handoff(ctx, name, to, "", func(r *placement.Record) {
		r.Checkpoint, r.Seq, r.From = cp.ID, cp.Seq, l.Host()
	})
	if err != nil {
		d.thaw(name, e)
		return out, moveErr(http.StatusBadGateway, "handing the lease to host %s: %v; the sandbox is served here again", to, err)
	}
	d.mu.Lock()
	if _, ok := d.served[name]; ok {
		d.hold(name, cp)
	}
	d.mu.Unlock()
	h.log.Info("move: sandbox "+name+" handed to host "+to+"; its root and state stay on this host's disk",
		"sandbox", name, "to", to, "checkpoint", cp.ID, "seq", cp.Seq)
	rec, err := waitServed(ctx, l, name, to, cp.ID)
	if err != nil {
		return out, err
	}
	out = api.SandboxMoved{Name: name, From: l.Host(), To: to, URL: rec.URL, Checkpoint: cp.ID, Seq: cp.Seq,
		Seconds: time.Since(start).Seconds(), Sent: sent, Fetched: api.Fetched{Objects: rec.Fetched.Objects, Bytes: rec.Fetched.Bytes}}
	h.log.Info("move: sandbox "+name+" is served by host "+to, "sandbox", name, "to", to, "url", rec.URL,
		"seconds", out.Seconds, "sent_objects", sent.Objects, "fetched_objects", out.Fetched.Objects)
	return out, nil
}

// beginMove checks name is a sandbox of DIR this host holds, and marks it
// moving (one move of a name at a time).
func (d *Dir) beginMove(name string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.served[name]; !ok {
		if sb, _ := d.h.Get(name); sb != nil {
			return moveErr(http.StatusConflict, "sandbox %s is not one of --sandboxes DIR (a fixed sandbox or a fork): it does not move", name)
		}
		return moveErr(http.StatusNotFound, "sandbox %s is not served here", name)
	}
	if d.moving[name] {
		return moveErr(http.StatusConflict, "sandbox %s is being moved already", name)
	}
	if err := d.h.checkNoForks(name); err != nil {
		return moveErr(http.StatusConflict, "%v: its forks live on this host; merge or delete them first", err)
	}
	if !d.h.cfg.Placement.Holds(name) {
		return moveErr(http.StatusConflict, "this host does not hold the lease of sandbox %s", name)
	}
	d.moving[name] = true
	return nil
}

func (d *Dir) endMove(name string) {
	d.mu.Lock()
	delete(d.moving, name)
	d.mu.Unlock()
}

// freeze is step 2: the lease "moving", the writes refused, the mirrors
// unmounted, the last checkpoint made and in the fleet, every event
// published. It answers the checkpoint and what the replicator sent for
// it; on failure the sandbox is served as before.
func (d *Dir) freeze(ctx context.Context, name, to string, e *entry) (checkpoint.Checkpoint, api.Fetched, error) {
	h := d.h
	var sent api.Fetched
	fail := func(err error) (checkpoint.Checkpoint, api.Fetched, error) {
		d.thaw(name, e)
		var me *rest.MoveError
		if errors.As(err, &me) {
			return checkpoint.Checkpoint{}, sent, err
		}
		return checkpoint.Checkpoint{}, sent, moveErr(http.StatusBadGateway, "%v; nothing was moved: the sandbox is served here again", err)
	}
	if err := h.cfg.Placement.SetMoving(ctx, name, true, to); err != nil {
		return fail(fmt.Errorf("marking the lease moving: %w", err))
	}
	gctx, cancel := context.WithTimeout(ctx, writesWait)
	err := h.cfg.Registry.GateWrites(gctx, name)
	cancel()
	if err != nil {
		return fail(err)
	}
	e.unmount(h, name)
	before, err := d.replicated(ctx, name, "")
	if err != nil {
		return fail(err)
	}
	cp, err := checkpoint.Create(ctx, e.sb, checkpoint.Options{Reason: ReasonMove})
	if err != nil {
		return fail(fmt.Errorf("the last checkpoint: %w", err))
	}
	after, err := d.replicated(ctx, name, cp.ID)
	if err != nil {
		return fail(err)
	}
	// What the fleet lacked of the tree: the files' objects, not the
	// manifest's entries sent as an object (a large tree's), which the new
	// host reads but does not fetch into its store.
	sent = api.Fetched{
		Objects: int64((after.Objects - after.EntriesObjects) - (before.Objects - before.EntriesObjects)),
		Bytes:   int64((after.ObjectBytes - after.EntriesBytes) - (before.ObjectBytes - before.EntriesBytes)),
	}
	if h.cfg.Events != nil {
		if left := h.cfg.Events.Flush(name, fleetWait); left > 0 {
			return fail(fmt.Errorf("%d events of the journal not published after %v", left, fleetWait))
		}
	}
	return cp, sent, nil
}

// replicated waits until the replicator has sent every checkpoint of
// name made, and the fleet holds the manifest of id ("": none asked),
// and answers its counters then. A large tree never replicated takes
// longer to send than a wait on the broker may: the wait fails once the
// replicator sent nothing for fleetWait (the broker away), or after
// adoptWait whatever it sent (as long as the new host may take to fetch
// it).
func (d *Dir) replicated(ctx context.Context, name, id string) (replicate.Stats, error) {
	r := d.h.cfg.Replicator
	ctx, cancel := context.WithTimeout(ctx, adoptWait)
	defer cancel()
	var sent uint64
	stalled := time.Now().Add(fleetWait)
	for {
		st, ok := r.Stats(name)
		if !ok {
			return replicate.Stats{}, fmt.Errorf("sandbox %s is not replicated", name)
		}
		if st.Behind == 0 {
			if id == "" {
				return st, nil
			}
			hctx, hcancel := context.WithTimeout(ctx, fleetWait)
			_, err := r.Fleet().Header(hctx, name, id)
			hcancel()
			if err == nil {
				return st, nil
			}
		}
		if n := st.Objects + st.Manifests; n != sent {
			sent, stalled = n, time.Now().Add(fleetWait)
		}
		if time.Now().After(stalled) {
			return replicate.Stats{}, fmt.Errorf("the replicator has not sent checkpoint %q of sandbox %s to the fleet: nothing sent for %v (%d checkpoints behind)",
				id, name, fleetWait, st.Behind)
		}
		select {
		case <-ctx.Done():
			return replicate.Stats{}, fmt.Errorf("the replicator has not sent checkpoint %q of sandbox %s to the fleet after %v (%d checkpoints behind)",
				id, name, adoptWait, st.Behind)
		case <-time.After(movePoll):
		}
	}
}

// thaw undoes freeze: the writes let in again, the lease "serving", the
// --mount-all mirror mounted again.
func (d *Dir) thaw(name string, e *entry) {
	h := d.h
	h.cfg.Registry.UngateWrites(name)
	ctx, cancel := context.WithTimeout(context.Background(), fleetWait)
	defer cancel()
	if err := h.cfg.Placement.SetMoving(ctx, name, false, ""); err != nil {
		h.log.Warn("move: marking the lease serving again failed", "sandbox", name, "err", err)
	}
	e.mu.Lock()
	mounted := len(e.mirrors) > 0
	e.mu.Unlock()
	if h.cfg.MountAll != "" && !mounted {
		if _, err := h.mount(name, e, mountAllPoint(h.cfg.MountAll, name), true); err != nil {
			h.log.Warn("move: mounting the mirror again failed", "sandbox", name, "err", err)
		}
	}
}

// waitServed waits until the lease says host to serves name from the
// checkpoint cp, and what it fetched.
func waitServed(ctx context.Context, l *placement.Leases, name, to, cp string) (placement.Record, error) {
	ctx, cancel := context.WithTimeout(ctx, moveWait)
	defer cancel()
	for {
		r, ok := l.Lookup(name)
		if ok && r.Host == to && r.Checkpoint == cp {
			if r.State == placement.Serving && r.Fetched != nil {
				return r, nil
			}
			if r.Error != "" {
				return r, moveErr(http.StatusBadGateway, "host %s did not take sandbox %s up from checkpoint %s: %s; "+
					"it is served by no host, its root and state are still on this host's disk, and the placement says moving to %s",
					to, name, cp, r.Error, to)
			}
		}
		select {
		case <-ctx.Done():
			return r, moveErr(http.StatusGatewayTimeout, "sandbox %s was handed to host %s at checkpoint %s, which did not serve it within %v; "+
				"it is not served here, its root and state are still on this host's disk, and the placement says moving to %s",
				name, to, cp, moveWait, to)
		case <-time.After(movePoll):
		}
	}
}

// entryOf is the entry served as name (nil: none).
func (h *Host) entryOf(name string) *entry {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[name]
}
