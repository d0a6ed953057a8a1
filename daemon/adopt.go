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
//  4. DIR/.adopt-NAME (no DNS label: DIR never serves it), empty, opened
//     as the sandbox but not served: the checkpoint's tree is written
//     into it as its objects come (replicate's FetchTree: modes, owners,
//     times, symlinks, empty directories; each object checked against its
//     name), unjournaled, since nothing serves it;
//  5. then it is renamed DIR/NAME whole (a crash before leaves no half
//     tree served; the next adoption of the name removes it) and served
//     as any sandbox of DIR, its kernel watch placed from the checkpoint's
//     directories (core.Options.Made);
//  6. served, its store is filled from the tree and the checkpoint
//     recorded (storeTaken), in the background: the store's writes cost
//     about what the tree's do, and nobody waits for them.
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

// maxSeq and maxSeqJump bound the seqs the fleet's messages may make the
// new journal number after: what a broker claims is checked, and a seq
// near the top would leave the journal no numbers.
const (
	maxSeq     = 1 << 62
	maxSeqJump = 1 << 40
)

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
		return out, errStopping
	}
	var st unix.Stat_t
	if sb, _ := h.Get(name); sb != nil || h.isFork(name) || unix.Fstatat(d.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		return out, fmt.Errorf("sandbox %s: %w", name, fs.ErrExist)
	}
	done := false
	undo, err := h.claim(ctx, name)
	if err != nil {
		return out, err
	}
	defer func() {
		if !done {
			undo()
		}
	}()
	w, err := h.fleetHeader(ctx, name, cp)
	if err != nil {
		return out, err
	}
	if err := h.readRest(ctx, &w, name); err != nil {
		return out, err
	}
	hd := w.hd

	// The tree is made under a name DIR never serves (not a DNS label)
	// and renamed into place whole: a crash leaves no half tree served.
	staging, renamed := stagingPrefix+name, false
	defer func() {
		if !done {
			bg := context.WithoutCancel(ctx)
			_ = core.RemoveAllAt(bg, d.fd, staging)
			if renamed {
				_ = core.RemoveAllAt(bg, d.fd, name)
			}
			_ = removeState(h.cfg.State, name)
		}
	}()
	statePath, err := h.newState(name, w)
	if err != nil {
		return out, err
	}
	if err := core.RemoveAllAt(ctx, d.fd, staging); err != nil { // a crashed adoption's
		return out, err
	}
	if err := unix.Mkdirat(d.fd, staging, 0o700); err != nil {
		return out, fmt.Errorf("sandbox %s: %w", name, err)
	}
	id, err := dirIdentity(d.fd, staging) // a rename keeps it
	if err == nil {
		err = h.adoptState(name, id, "")
	}
	if err != nil {
		return out, err
	}
	tw, err := d.writeTree(ctx, name, staging, statePath, hd.ID, hd.Seq)
	if err != nil {
		return out, err
	}
	if err := unix.Renameat2(d.fd, staging, d.fd, name, unix.RENAME_NOREPLACE); err != nil {
		return out, fmt.Errorf("sandbox %s: %w", name, err)
	}
	renamed = true
	if dfd, err := unix.Openat(d.fd, ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0); err == nil {
		_ = unix.Fsync(dfd) // the rename, kept
		unix.Close(dfd)
	}
	var stored func()
	sb, err := d.startMade(name, tw.unstored.Dirs, func(sb *core.Sandbox) (err error) {
		stored, err = checkpoint.Storing(sb, hd.ID) // before any request can ask for it
		return err
	})
	if err != nil {
		return out, err
	}
	h.waitWatched(ctx, sb, name, "the adopted sandbox") // as a fork's
	done = true
	h.log.Info("took sandbox "+name+" up from the fleet", "sandbox", name, "checkpoint", hd.ID, "seq", hd.Seq,
		"from", tw.fetched.Host, "objects", tw.fetched.Objects, "bytes", tw.fetched.Bytes, "lost", len(w.lost), "numbering_after", w.after,
		"tree_ms", tw.took.Milliseconds())
	h.storeTaken(sb, name, tw.unstored, stored)
	return h.adopted(name, sb, w, tw.fetched), nil
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
		if m.Seq-hd.Seq > maxSeqJump {
			continue // no host hands out that many seqs: a forged event would spend the numbering
		}
		after = max(after, m.Seq)
		lost = append(lost, api.Lost{Seq: m.Seq, Type: m.Type, Path: m.Path, OldPath: m.OldPath, Host: m.Host, Time: m.Timestamp})
	}
	return lost, truncated, after, nil
}

// newState makes the state directory of the sandbox taken up: a state
// left under the name archived, the sandbox's identity (the checkpoint's:
// the root is marked with it, so it is the same sandbox's wherever it
// goes next), the fleet's token and quota kept, and a journal that
// numbers on after seq. It answers the directory's path.
func (h *Host) newState(name string, w fleetWord) (string, error) {
	path := statedir.Sandbox(h.cfg.State, name)
	for _, f := range []string{statedir.TokenFile, "journal.db", "checkpoints"} {
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(path, f), &st) == nil {
			// Another sandbox's of the name (removed by hand): kept aside,
			// its seq mark carried over for history.Begin to number above.
			if err := h.archiveState(name); err != nil {
				return path, err
			}
			break
		}
	}
	fd, path, err := openSandboxState(h.cfg.State, name)
	if err != nil {
		return path, err
	}
	defer unix.Close(fd)
	if statedir.IsIdentity(w.hd.Identity) {
		if err := statedir.Publish(fd, statedir.IdentityFile, w.hd.Identity+"\n"); err != nil {
			return path, fmt.Errorf("sandbox %s: its identity: %w", name, err)
		}
	}
	if err := h.writeFleetInfo(fd, name, w, statedir.Publish); err != nil {
		return path, err
	}
	if err := history.Begin(path, w.after, h.log); err != nil {
		return path, fmt.Errorf("sandbox %s: %w", name, err)
	}
	return path, nil
}

// stagingPrefix starts the name in DIR a sandbox's tree is made under
// before it is renamed into place (a '.' is no DNS label: never served).
const stagingPrefix = ".adopt-"

// treeWritten is what writeTree did: what it fetched, the checkpoint
// its store is still to hold, and how long the tree took (the manifest,
// the objects, the files), which the take-up's log line tells.
type treeWritten struct {
	fetched  replicate.Fetched
	unstored replicate.Unstored
	took     time.Duration
}

// writeTree writes the tree of the fleet's checkpoint id of name into
// DIR/staging, through the sandbox name opened on it but not served (so
// nothing is journaled); seq is the checkpoint's, as its header said.
// The store is filled after the sandbox is served (storeTaken). Called
// with mu held.
func (d *Dir) writeTree(ctx context.Context, name, staging, statePath, id string, seq uint64) (treeWritten, error) {
	var tw treeWritten
	o := d.h.cfg.Options
	o.StateDir = statePath
	o.Made = map[string][]string{"/": nil} // an empty root: nothing to sweep
	sb, err := core.OpenAt(d.fd, staging, filepath.Join(d.path, staging), name, o)
	if err != nil {
		return tw, err
	}
	defer sb.Close()
	rfd, err := unix.Openat(d.fd, staging, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return tw, err
	}
	defer unix.Close(rfd)
	t0 := time.Now()
	tw.fetched, tw.unstored, err = d.h.cfg.Replicator.Fleet().FetchTree(ctx, name, id, sb, rfd)
	tw.took = time.Since(t0)
	if err != nil {
		return tw, err
	}
	if tw.fetched.Checkpoint.Seq != seq {
		// The journal was begun after the header's seq: a manifest that
		// changed since it was read is not the one the journal follows.
		return tw, fmt.Errorf("checkpoint %s: its manifest changed in the fleet while it was taken up (seq %d, then %d): refused", id, seq, tw.fetched.Checkpoint.Seq)
	}
	return tw, nil
}

// storeTaken fills the store of the sandbox name, just taken up, from
// its tree, while it is served, and records its checkpoint (replicate's
// Store): until then (stored, called after) a lookup of that checkpoint
// answers checkpoint.ErrStoring. It stops when the sandbox is served no
// more; a checkpoint not stored is told, and the next one walks the
// whole tree.
func (h *Host) storeTaken(sb *core.Sandbox, name string, u replicate.Unstored, stored func()) {
	fleet := h.cfg.Replicator.Fleet()
	ok := h.goServed(name, func(ctx context.Context) {
		defer stored()
		t0 := time.Now()
		cp, st, err := fleet.Store(ctx, sb, u)
		if err != nil {
			h.log.Warn("sandbox "+name+": its checkpoint "+u.Checkpoint.ID+" from the fleet was not stored on this host; the next checkpoint reads the whole tree",
				"sandbox", name, "checkpoint", u.Checkpoint.ID, "err", err)
			return
		}
		h.log.Info("stored checkpoint "+cp.ID+" of sandbox "+name+" from its tree", "sandbox", name, "checkpoint", cp.ID,
			"from_tree", st.FromTree, "fetched", st.Fetched, "store_ms", time.Since(t0).Milliseconds())
	})
	if !ok {
		stored()
	}
}
