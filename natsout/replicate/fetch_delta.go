package replicate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core"
	"sandfs/core/checkpoint"
)

// A fetch into a store that holds a checkpoint of the manifest's chain of
// deltas (a sandbox moving back to a host that kept its store: the chain
// leads down to the checkpoint this host sent, or took in, before) reads
// the deltas above that checkpoint alone, composes them, and imports the
// result as a delta of it (checkpoint.ImportDelta): reading, checking and
// recording the tree's changes, not the tree. Each delta read is checked as
// ReadManifest checks it; what the composed changes do to the tree is
// checked by the store, against the base's tree.

// changes is a manifest read as what changed since base, a checkpoint the
// store holds: the entries set (sorted) and the paths removed (sorted).
type changes struct {
	m       Manifest // the header of the manifest asked for
	base    string
	set     []Entry
	removed []string
}

// holds is whether sb's store holds the checkpoint id (the fleet's
// manifest of it names the tree the store has: ids are never reused).
func holds(sb *core.Sandbox) func(string) bool {
	return func(id string) bool {
		_, err := checkpoint.ByID(sb, id)
		return err == nil
	}
}

// readDelta reads the manifest id of the sandbox name as changes since the
// newest checkpoint of its chain of deltas that have answers held. ok is
// false when there is none (the chain reaches a full manifest first) or
// id itself is held.
func readDelta(ctx context.Context, kv jetstream.KeyValue, obs jetstream.ObjectStore, name, id string, have func(string) bool) (c changes, ok bool, err error) {
	var chain []Manifest
	ids := []string{}
	for cur := id; ; {
		if have(cur) {
			if len(chain) == 0 {
				return c, false, nil
			}
			c.base = cur
			break
		}
		if len(chain) == maxReadChain {
			return c, false, fmt.Errorf("manifest %s: a chain of more than %d deltas: refused", id, maxReadChain)
		}
		d, err := readHead(ctx, kv, cur) // a whole manifest's body is not read here
		if errors.Is(err, jetstream.ErrKeyNotFound) && len(chain) > 0 {
			return c, false, fmt.Errorf("manifest %s: its base %s is not in the KV: refused", ids[len(ids)-1], cur)
		} else if err != nil {
			return c, false, err
		}
		if d.Sandbox != name || d.Checkpoint.ID != cur {
			return c, false, fmt.Errorf("manifest %s of sandbox %s names checkpoint %q of sandbox %q: refused", cur, name, d.Checkpoint.ID, d.Sandbox)
		}
		if d.Base == "" {
			return c, false, nil // whole: no base held below it
		}
		if err := readBody(ctx, obs, cur, &d); err != nil {
			return c, false, err
		}
		ids = append(ids, cur)
		switch {
		case slices.Contains(ids, d.Base):
			return c, false, fmt.Errorf("manifest %s: its base %s is a delta of it (a cycle): refused", cur, d.Base)
		case !checkpoint.ValidID(d.Base):
			return c, false, fmt.Errorf("manifest %s: base %q: not a checkpoint id: refused", cur, d.Base)
		}
		if err := checkDelta(d.Entries, d.Removed); err != nil {
			return c, false, fmt.Errorf("manifest %s, a delta of %s: %w: refused", cur, d.Base, err)
		}
		chain = append(chain, d)
		cur = d.Base
	}
	// The deltas in the order made, each over the one before.
	set, removed := map[string]Entry{}, map[string]bool{}
	for i := len(chain) - 1; i >= 0; i-- {
		for _, p := range chain[i].Removed {
			delete(set, p)
			removed[p] = true
		}
		for _, e := range chain[i].Entries {
			set[e.Path] = e
			delete(removed, e.Path)
		}
	}
	c.m = chain[0]
	c.m.Entries, c.m.Removed, c.m.Base = nil, nil, ""
	for _, e := range set {
		c.set = append(c.set, e)
	}
	sort.Slice(c.set, func(i, j int) bool { return c.set[i].Path < c.set[j].Path })
	for p := range removed {
		c.removed = append(c.removed, p)
	}
	sort.Strings(c.removed)
	return c, true, nil
}

// fetchDelta brings the changes c into sb's store: the objects it lacks,
// then the checkpoint, as a delta of c.base.
func (f *Fleet) fetchDelta(ctx context.Context, obs jetstream.ObjectStore, sb *core.Sandbox, c changes) (Fetched, error) {
	var out Fetched
	id := c.m.Checkpoint.ID
	check := func(set []checkpoint.Entry) error { return checkpoint.CheckChanges(set, c.removed) }
	set, err := f.bring(ctx, obs, sb, id, c.set, check, &out)
	if err != nil {
		return out, err
	}
	if out.Checkpoint, err = checkpoint.ImportDelta(sb, imported(c.m, out), c.base, set, c.removed); err != nil {
		return out, err
	}
	out.Host = c.m.Host
	return out, nil
}
