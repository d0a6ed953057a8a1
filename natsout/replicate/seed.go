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
// send that checkpoint's manifest full. So the first send of a run looks
// for a checkpoint of the store, older than the one sent, that the fleet
// has: its objects are in the buckets (a manifest is written after
// them), and its manifest is the base of the next delta, at the depth it
// has (the chain stays within the sender's bound).
//
// The parent of the checkpoint sent is asked first: when the fleet has
// it, the checkpoint goes as the store's delta (fromdelta.go), and only
// the header of the parent's manifest is read; its tree is read (learn)
// only if a later send compares trees. Otherwise the newest checkpoint
// the fleet has is learnt at once: its header from the KV, its tree from
// the store (ReadManifestLocal).

// seedTries bounds the checkpoints a seed asks the fleet for.
const seedTries = 4

// seed sets what the fleet holds before cp: when it has parent (cp's
// parent in the store), lastID and chain from that manifest's header, no
// tree read; else last, lastID, chain and prev learnt from the newest
// checkpoint before cp it has. prev is empty when none is found (or the
// broker fails: then everything is offered, as before).
func (s *sandbox) seed(ctx context.Context, obs jetstream.ObjectStore, cp checkpoint.Checkpoint, parent string) {
	s.prev = map[string]bool{}
	if parent != "" {
		rctx, cancel := context.WithTimeout(ctx, opTimeout)
		m, err := readHead(rctx, s.kv, parent)
		cancel()
		if err == nil && m.Checkpoint.ID == parent && m.Sandbox == s.name {
			s.last, s.lastID, s.chain = nil, parent, 0
			if m.Base != "" {
				s.chain = min(max(m.Chain, 1), maxReadChain)
			}
			return
		}
	}
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
		switch err := s.learn(ctx, obs, c.ID); {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			continue
		case err != nil:
			s.log.Info("replicate: not learning what the fleet holds", "checkpoint", c.ID, "err", err)
		}
		return
	}
}

// learn sets last, lastID, chain and prev from the fleet's manifest of
// the checkpoint id, its tree from the store. On an error the base is
// forgotten (the next manifest is full) and prev kept.
func (s *sandbox) learn(ctx context.Context, obs jetstream.ObjectStore, id string) error {
	s.last, s.lastID, s.chain = nil, "", 0
	rctx, cancel := context.WithTimeout(ctx, opTimeout)
	m, err := ReadManifestLocal(rctx, s.kv, obs, id, StoreOf(s.sb))
	cancel()
	if err != nil {
		return err
	}
	for _, e := range m.Entries {
		if e.Type == "file" {
			s.prev[e.Hash] = true
		}
	}
	s.last, s.lastID, s.chain = entriesByPath(m.Entries), id, m.Depth
	return nil
}
