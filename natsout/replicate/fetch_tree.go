package replicate

import (
	"context"

	"sandfs/core"
	"sandfs/core/checkpoint"
)

// Taking a sandbox up into an empty root: FetchTree is Fetch with each
// object written into the tree as it comes (checkpoint.TreeWriter)
// instead of into the store, and the checkpoint not yet recorded. The
// host serves the tree, then Store fills the store from it and records
// the checkpoint (checkpoint.Fill). Writing the store costs about as
// much as writing the tree, and it is then not part of the time nobody
// serves the sandbox.

// Unstored is a checkpoint whose tree FetchTree wrote and the store does
// not hold yet.
type Unstored struct {
	Checkpoint checkpoint.Checkpoint // as it will be recorded
	Dirs       map[string][]string   // its directories (checkpoint.Dirs' form)
	entries    []checkpoint.Entry
	ids        checkpoint.Identities
	sizes      map[string]int64
}

// FetchTree writes the tree of the fleet's checkpoint id of the sandbox
// name into dst, the empty root of sb, which nothing serves yet: the
// objects sb's store lacks fetched and written into their files (each
// checked against its name), the others copied from the store. On an
// error the caller removes what dst holds.
func (f *Fleet) FetchTree(ctx context.Context, name, id string, sb *core.Sandbox, dst int) (Fetched, Unstored, error) {
	var out Fetched
	kv, obs, err := f.buckets(ctx, name, id)
	if err != nil {
		return out, Unstored{}, err
	}
	m, err := manifestOf(ctx, kv, obs, name, id, sb)
	if err != nil {
		return out, Unstored{}, err
	}
	entries, missing, sizes, err := checkEntries(sb, id, m.Entries, checkpoint.CheckEntries)
	if err != nil {
		return out, Unstored{}, err
	}
	tw, err := checkpoint.NewTreeWriter(ctx, sb, entries, dst)
	if err != nil {
		return out, Unstored{}, err
	}
	defer tw.Close()
	n, err := f.fetchAll(ctx, obs, tw.Put, missing, sizes)
	if err != nil {
		return out, Unstored{}, err
	}
	ids, err := tw.Finish(ctx)
	if err != nil {
		return out, Unstored{}, err
	}
	out.Objects, out.Bytes, out.Host = int64(len(missing)), n, m.Host
	out.Checkpoint = imported(m, out)
	return out, Unstored{Checkpoint: out.Checkpoint, Dirs: tw.Dirs(), entries: entries, ids: ids, sizes: sizes}, nil
}

// Store fills sb's store with u, a tree FetchTree wrote into sb's root,
// which sb may serve meanwhile, and records its checkpoint: each object
// from the first of its files still as written, or else fetched again.
func (f *Fleet) Store(ctx context.Context, sb *core.Sandbox, u Unstored) (checkpoint.Checkpoint, checkpoint.FillStats, error) {
	obs, err := f.objects(ctx)
	if err != nil {
		return u.Checkpoint, checkpoint.FillStats{}, err
	}
	put := storePut(sb)
	return checkpoint.Fill(ctx, sb, u.Checkpoint, u.entries, u.ids, func(ctx context.Context, hash string) error {
		_, err := f.fetchObject(ctx, obs, put, hash, u.sizes[hash])
		return err
	})
}
