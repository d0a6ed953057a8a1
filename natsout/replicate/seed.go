package replicate

import (
	"context"
	"errors"
	"sort"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core/checkpoint"
)

// What the fleet holds of a sandbox before this run sent anything: a
// host restarted, or one that took the sandbox up from the fleet (its
// store holds the checkpoint it came from), would otherwise offer every
// object of its first checkpoint again (a small one whole, small.go) and
// send that checkpoint's manifest full. So the first send of a run reads
// the manifest of the newest checkpoint of the store, older than the one
// sent, that the fleet has (its header from the KV, its tree from the
// store: ReadManifestLocal): its objects are in the buckets (a manifest is
// written after them), and the manifest is the base of the next delta,
// at the depth it has (the chain stays within the sender's bound).

// seedTries bounds the checkpoints a seed asks the fleet for.
const seedTries = 4

// seed sets prev, last, lastID and chain from the fleet's manifest of the
// newest checkpoint of the store before cp; prev is empty when there is
// none (or the broker fails: then everything is offered, as before).
func (s *sandbox) seed(ctx context.Context, obs jetstream.ObjectStore, cp checkpoint.Checkpoint) {
	s.prev = map[string]bool{}
	list, err := checkpoint.List(s.sb)
	if err != nil {
		return
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].Created.After(list[j].Created) })
	tries := 0
	for _, c := range list {
		if c.ID == cp.ID || c.Created.After(cp.Created) {
			continue
		}
		if tries++; tries > seedTries {
			return
		}
		rctx, cancel := context.WithTimeout(ctx, opTimeout)
		m, err := ReadManifestLocal(rctx, s.kv, obs, c.ID, StoreOf(s.sb))
		cancel()
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		} else if err != nil {
			s.log.Info("replicate: not learning what the fleet holds", "checkpoint", c.ID, "err", err)
			return
		}
		for _, e := range m.Entries {
			if e.Type == "file" {
				s.prev[e.Hash] = true
			}
		}
		s.last, s.lastID, s.chain = entriesByPath(m.Entries), c.ID, m.Depth
		return
	}
}
