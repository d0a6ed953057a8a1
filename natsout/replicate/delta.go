package replicate

import (
	"errors"
	"fmt"
	"sort"

	"sandfs/core/checkpoint"
)

// Manifests as deltas: a checkpoint that changed a few paths of a large
// tree sends those paths, not the tree again. The sender keeps the entries
// of the manifest it sent last and sends a delta against it (Base) while
// the chain of deltas since the last full manifest is shorter than
// deltaChain; a reader applies the chain back to a full manifest, so the
// chain's length bounds what one read costs. The sender makes the delta
// from the store's own delta of the checkpoint when its parent is the
// manifest sent last (fromDelta), else by comparing the trees (diff). A
// sender that has sent nothing yet (a restart, a take-up) bases its first
// delta on what the fleet holds (seed.go).

// deltaChain is how many deltas a sender sends after a full manifest
// before the next full one.
const deltaChain = 16

// maxReadChain bounds the deltas a reader follows to a full manifest:
// past it the chain is refused, not read (a hostile or broken KV).
const maxReadChain = 64

// sameEntry is whether a and b record a path alike.
func sameEntry(a, b Entry) bool {
	return a.Path == b.Path && a.Type == b.Type && a.Mode == b.Mode && a.Uid == b.Uid && a.Gid == b.Gid &&
		a.Mtime.Equal(b.Mtime) && a.Size == b.Size && a.Target == b.Target && a.Hash == b.Hash
}

// diff is the delta from last (the entries of the manifest sent last, by
// path) to entries (every path now, sorted), and entries by path: the
// changed and added entries, sorted, and the paths removed, sorted.
func diff(last map[string]Entry, entries []Entry) (byPath map[string]Entry, changed []Entry, removed []string) {
	byPath = entriesByPath(entries)
	for _, e := range entries {
		if old, ok := last[e.Path]; !ok || !sameEntry(old, e) {
			changed = append(changed, e)
		}
	}
	for p := range last {
		if _, ok := byPath[p]; !ok {
			removed = append(removed, p)
		}
	}
	sort.Strings(removed)
	return byPath, changed, removed
}

// delta is m (full) as a delta against the manifest sent last when one
// may be sent (see delta.go) and names fewer paths than m (a removal
// costs less than an entry, so it is then the smaller), else m; and m's
// entries by path.
func (s *sandbox) delta(m Manifest) (map[string]Entry, Manifest) {
	if s.last == nil || s.chain >= s.r.chainMax() {
		return entriesByPath(m.Entries), m
	}
	byPath, changed, removed := diff(s.last, m.Entries)
	if len(changed)+len(removed) >= len(m.Entries) {
		return byPath, m
	}
	m.Base, m.Entries, m.Removed, m.Chain = s.lastID, changed, removed, s.chain+1
	return byPath, m
}

// errDelta is a delta that cannot be applied to its base.
var errDelta = errors.New("a malformed delta")

// apply is the tree of base (every path) with removed taken out and
// changed put in, sorted by path. A delta checkDelta refuses, or that
// removes a path the base lacks, is errDelta.
func apply(base, changed []Entry, removed []string) ([]Entry, error) {
	if err := checkDelta(changed, removed); err != nil {
		return nil, err
	}
	tree := make(map[string]Entry, len(base)+len(changed))
	for _, e := range base {
		if _, dup := tree[e.Path]; dup {
			return nil, fmt.Errorf("its base names %q twice: %w", e.Path, errDelta)
		}
		tree[e.Path] = e
	}
	for _, p := range removed {
		if _, ok := tree[p]; !ok {
			return nil, fmt.Errorf("removed %q, which its base does not have: %w", p, errDelta)
		}
		delete(tree, p)
	}
	for _, e := range changed {
		tree[e.Path] = e
	}
	out := make([]Entry, 0, len(tree))
	for _, e := range tree {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// checkDelta is errDelta for a delta that names a path twice, out of
// order, not clean, or both removed and changed.
func checkDelta(changed []Entry, removed []string) error {
	for i, p := range removed {
		if !checkpoint.CleanPath(p) {
			return fmt.Errorf("removed %q: not a clean path beneath the root: %w", p, errDelta)
		}
		if i > 0 && removed[i-1] >= p {
			return fmt.Errorf("removed %q: out of order or twice: %w", p, errDelta)
		}
	}
	for i, e := range changed {
		if !checkpoint.CleanPath(e.Path) {
			return fmt.Errorf("entry %q: not a clean path beneath the root: %w", e.Path, errDelta)
		}
		if i > 0 && changed[i-1].Path >= e.Path {
			return fmt.Errorf("entry %q: out of order or twice: %w", e.Path, errDelta)
		}
		if j := sort.SearchStrings(removed, e.Path); j < len(removed) && removed[j] == e.Path {
			return fmt.Errorf("entry %q: both removed and changed: %w", e.Path, errDelta)
		}
	}
	return nil
}

// entriesByPath is entries keyed by path: what a sender keeps of the
// manifest it sent last.
func entriesByPath(entries []Entry) map[string]Entry {
	m := make(map[string]Entry, len(entries))
	for _, e := range entries {
		m[e.Path] = e
	}
	return m
}
