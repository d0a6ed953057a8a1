package daemon

import (
	"context"
	"errors"
	"fmt"
	"time"

	"sandfs/api"
	"sandfs/core"
	"sandfs/natsout/placement"
)

// The new host's side of a move (move.go): with --placement, the Dir
// answers the old host's Ping (it takes sandboxes in when it has
// --replicate and the journal kept) and hears every lease handed to this
// host with a checkpoint (placement.WatchMoves, a watch of the bucket that
// replays it at start, so a handoff made while this daemon was down is
// taken up when it starts). It takes the sandbox up from that checkpoint
// with Adopt (only the objects the local store lacks fetched; the journal
// numbering on above the checkpoint's seq; the sandbox's own token and
// quota), whose start takes the lease over (it names this host), then
// writes what it fetched in the lease, which the old host answers with.
// A take-up that fails writes why in the lease (placement.Refuse).
//
// A name served here, or anything of the name in DIR already but the
// sandbox's own old root (the old host's Ping names the sandbox's
// identity: movein_inplace.go's oldRootOf), is refused when the old host
// asks, before anything changed. The sandbox's old root is taken up in
// place (takeUpInPlace): only what changed meanwhile is fetched and
// written.

// noteTries bounds the writes of what was fetched (a broker hiccup).
const noteTries = 5

// takeMovesIn answers the Ping and starts hearing the handoffs to this
// host (Run, with --placement and --sandboxes).
func (d *Dir) takeMovesIn(l *placement.Leases) error {
	if err := l.AnswerPings(d.takesNameIn); err != nil {
		return err
	}
	l.WatchMoves(d.movedIn)
	return nil
}

// takesIn says why this host takes no sandbox in (nil: it does).
func (d *Dir) takesIn() error {
	h := d.h
	if h.cfg.Replicator == nil || h.cfg.State == "" || !h.cfg.History {
		return errors.New("it needs --replicate and the daemon's state (the journal kept)")
	}
	return nil
}

// takesNameIn says why this host does not take the sandbox name, of
// identity id, in.
func (d *Dir) takesNameIn(name, id string) error {
	if err := d.takesIn(); err != nil {
		return err
	}
	if err := core.CheckSandboxName(name); err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case d.fd < 0:
		return errStopping
	case d.moving[name]:
		return fmt.Errorf("sandbox %s is moving here already", name)
	case d.h.isFork(name):
		return fmt.Errorf("a sandbox %s is served here", name)
	case d.holdsName(name):
		if err := d.oldRootOf(name, id); err != nil {
			return fmt.Errorf("its --sandboxes DIR holds %s already, and not as this sandbox's old root: %v", name, err)
		}
		return nil // taken up in place
	}
	if sb, _ := d.h.Get(name); sb != nil {
		return fmt.Errorf("a sandbox %s is served here", name)
	}
	return nil
}

// movedIn takes up the sandbox the lease r hands to this host, in a
// goroutine of its own (the watch must not wait).
func (d *Dir) movedIn(r placement.Record) {
	d.mu.Lock()
	if d.moving[r.Name] {
		d.mu.Unlock()
		return
	}
	d.moving[r.Name] = true
	delete(d.heldBack, r.Name) // handed again: taken up again
	d.mu.Unlock()
	go func() {
		defer d.endMove(r.Name)
		d.takeUp(r)
	}()
}

func (d *Dir) takeUp(r placement.Record) {
	h := d.h
	l := h.cfg.Placement
	name := r.Name
	if sb, _ := h.Get(name); sb != nil {
		return // served here already
	}
	log := h.log.With("sandbox", name, "from", r.From, "checkpoint", r.Checkpoint)
	log.Info("move: taking sandbox " + name + " in from host " + r.From)
	refuse := func(err error) {
		log.Warn("move: cannot take sandbox "+name+" in", "err", err)
		ctx, cancel := context.WithTimeout(h.ctx, fleetWait)
		defer cancel()
		if rerr := l.Refuse(ctx, name, r.Checkpoint, err.Error()); rerr != nil {
			log.Warn("move: writing the refusal in the lease failed", "err", rerr)
		}
	}
	if err := d.takesIn(); err != nil {
		refuse(err)
		return
	}
	keep := l.KeepHanded(name, r.Checkpoint) // a take-up longer than the TTL keeps the handoff
	if err := waitHanded(h.ctx, l, name); err != nil {
		keep()
		refuse(err)
		return
	}
	d.mu.Lock()
	inPlace := d.fd >= 0 && d.holdsName(name)
	d.mu.Unlock()
	var made api.SandboxAdopted
	var err error
	if inPlace {
		made, err = d.takeUpInPlace(h.ctx, name, r.Checkpoint)
	} else {
		made, err = d.Adopt(h.ctx, name, r.Checkpoint)
	}
	keep()
	if err != nil {
		refuse(err)
		return
	}
	for try := 0; ; try++ {
		ctx, cancel := context.WithTimeout(h.ctx, fleetWait)
		err = l.Note(ctx, name, func(rec *placement.Record) {
			rec.Checkpoint, rec.Seq, rec.From = made.Checkpoint, made.Seq, r.From
			rec.Fetched = &placement.Fetched{Objects: made.Fetched.Objects, Bytes: made.Fetched.Bytes}
		})
		cancel()
		if err == nil || try+1 == noteTries || h.ctx.Err() != nil {
			break
		}
		time.Sleep(time.Second)
	}
	if err != nil {
		log.Warn("move: writing what was fetched in the lease failed; the old host's answer waits for it until its bound", "err", err)
	}
	log.Info("move: serving sandbox "+name+" moved from host "+r.From, "seq", made.Seq,
		"objects", made.Fetched.Objects, "bytes", made.Fetched.Bytes, "lost", len(made.Lost))
}

// waitHanded waits until this host's lookup of the placement (a watch of
// its own, which may hear the handoff after the watch of moves did) says
// name is handed to this host: the claim before the take-up reads it.
func waitHanded(ctx context.Context, l *placement.Leases, name string) error {
	ctx, cancel := context.WithTimeout(ctx, fleetWait)
	defer cancel()
	for {
		r, ok := l.Lookup(name)
		if ok && r.Host == l.Host() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the placement's lookup does not say sandbox %s is handed to this host after %v (it says %q)", name, fleetWait, r.Host)
		case <-time.After(movePoll):
		}
	}
}
