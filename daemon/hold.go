package daemon

import (
	"context"
	"time"

	"sandfs/core/checkpoint"
)

// # A root held after its sandbox moved away
//
// A sandbox moved to another host (move.go) leaves its root and state on
// this host's disk. Its sandbox is not closed then but held: served by no
// route or mirror, publishing and replicating nothing, its checkpoint
// schedule ended, yet its kernel watch running and its journal kept. When
// the sandbox is handed back here (takeUpInPlace), the journal says
// whether anything changed the root since the move's last checkpoint
// (checkpoint.Unchanged: the watch ran without a gap, nothing journaled
// after it). If nothing did, the held sandbox itself is taken up and
// served again (resumeHeld): the restore takes that checkpoint's tree as
// the root's (RestoreOptions.Unchanged), its store still holds the tree,
// and its watch never stopped, so nothing walks the root, neither the
// restore nor a comparison at start. Otherwise, or when the root is not
// held (the daemon restarted meanwhile), the held sandbox is closed and
// the take-up walks the root as it always did.
//
// What a held root changed while away is the take-up's to find and take
// back. Its journal here is never published (the events the fleet tells
// are the serving host's): the take-up numbers the journal above the
// fleet's seq and sets the publisher's cursor there.
//
// A held root costs its watch (an inotify instance, a watch a directory)
// and its sandbox's memory, so at most maxHeld are held, each for holdFor
// at most; the oldest goes first when one more comes, and all go when DIR
// is closed.
const (
	maxHeld = 4
	holdFor = 30 * time.Minute
)

type heldRoot struct {
	e     *entry
	cp    string // the move's last checkpoint
	seq   uint64 // its seq
	root  rootID // DIR/name when it was held: another directory is not it
	since time.Time
	timer *time.Timer
}

// hold stops serving name, a served sandbox of DIR moved away at
// checkpoint cp, and holds its sandbox (above). Called with mu held.
func (d *Dir) hold(name string, cp checkpoint.Checkpoint) {
	root := d.served[name]
	delete(d.served, name)
	ctx, cancel := context.WithTimeout(context.Background(), removeWait)
	e := d.h.unserve(ctx, name)
	cancel()
	if e == nil {
		return
	}
	d.unhold(name) // none is, but never two of a name
	for len(d.held) >= maxHeld {
		oldest := ""
		for n, hr := range d.held {
			if oldest == "" || hr.since.Before(d.held[oldest].since) {
				oldest = n
			}
		}
		d.unhold(oldest)
	}
	hr := &heldRoot{e: e, cp: cp.ID, seq: cp.Seq, root: root, since: time.Now()}
	hr.timer = time.AfterFunc(holdFor, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.held[name] == hr {
			d.unhold(name)
		}
	})
	d.held[name] = hr
	d.h.log.Info("stopped serving sandbox "+name+" of --sandboxes; its root is held, watched, for a move back",
		"sandbox", name, "checkpoint", cp.ID, "for", holdFor.String())
}

// takeHeld ends holding name's root, for its take-up. It answers the
// held root when the root is unchanged since the move, for the take-up to
// serve again (resumeHeld); else it closes it and answers nil. Called
// with mu held.
func (d *Dir) takeHeld(name string) *heldRoot {
	hr := d.held[name]
	if hr == nil {
		return nil
	}
	if root, isDir := d.stat(name); !isDir || root != hr.root || !checkpoint.Unchanged(hr.e.sb, hr.cp) {
		d.unhold(name)
		return nil
	}
	delete(d.held, name)
	hr.timer.Stop()
	return hr
}

// unhold ends holding name's root (none held: nothing) and closes its
// sandbox. Called with mu held.
func (d *Dir) unhold(name string) {
	hr := d.held[name]
	if hr == nil {
		return
	}
	delete(d.held, name)
	hr.timer.Stop()
	closeHeld(hr.e)
}

// closeHeld closes what hold kept open.
func closeHeld(e *entry) {
	e.cancel()
	e.sb.Close()
}

// unholdAll closes every held root (DIR closed). Called with mu held.
func (d *Dir) unholdAll() {
	for name := range d.held {
		d.unhold(name)
	}
}
