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

// fromDelta is cp's manifest as a delta of the manifest sent last, made
// from the store's own delta of cp (checkpoint.Delta) when cp's parent is
// that manifest's checkpoint: it costs about the changes, where comparing
// the trees (fromTree) costs about the tree. ok is false when it cannot
// be made so (no base, the chain at its bound, another parent, a base in
// the store, or a delta no smaller than the tree).
func (s *sandbox) fromDelta(cp checkpoint.Checkpoint) (out outgoing, ok bool, err error) {
	if s.last == nil || s.chain >= s.r.chainMax() {
		return out, false, nil
	}
	parent, set, del, err := checkpoint.Delta(s.sb, cp.ID)
	if err != nil || parent == "" || parent != s.lastID {
		return out, false, err
	}
	m := Manifest{Version: ManifestVersion, Sandbox: s.name, Host: s.r.cfg.Host, Checkpoint: header(cp),
		Base: s.lastID, Chain: s.chain + 1}
	added := map[string]bool{} // objects offered the fleet
	size := len(s.last)
	for _, e := range set {
		ent := EntryOf(e)
		old, had := s.last[e.Path]
		if had && sameEntry(old, ent) {
			continue // only its stat identity changed: the fleet's entry holds
		}
		if !had {
			size++
		}
		m.Entries = append(m.Entries, ent)
		if e.Type == "file" && !s.prev[e.Hash] && !added[e.Hash] {
			added[e.Hash] = true
			out.files = append(out.files, e)
		}
	}
	for _, p := range del {
		i := sort.Search(len(set), func(i int) bool { return set[i].Path >= p })
		if _, had := s.last[p]; !had || i < len(set) && set[i].Path == p {
			continue // not in the base, or set again after
		}
		m.Removed = append(m.Removed, p)
		size--
	}
	if len(m.Entries)+len(m.Removed) >= size {
		return outgoing{}, false, nil
	}
	out.m = m
	out.done = func(ours bool) {
		for h := range added {
			s.prev[h] = true // in the bucket now
		}
		if !ours {
			s.last, s.lastID, s.chain = nil, "", 0
			return
		}
		for _, p := range m.Removed {
			delete(s.last, p)
		}
		for _, e := range m.Entries {
			s.last[e.Path] = e
		}
		s.lastID, s.chain = cp.ID, m.Chain
	}
	return out, true, nil
}

// errDelta is a delta that cannot be applied to its base.
var errDelta = errors.New("a malformed delta")

// apply is the tree of base (every path) with removed taken out and
// changed put in, sorted by path. A path named twice, out of order, not
// clean, or removed though the base lacks it, is errDelta.
func apply(base, changed []Entry, removed []string) ([]Entry, error) {
	tree := make(map[string]Entry, len(base)+len(changed))
	for _, e := range base {
		if _, dup := tree[e.Path]; dup {
			return nil, fmt.Errorf("its base names %q twice: %w", e.Path, errDelta)
		}
		tree[e.Path] = e
	}
	for i, p := range removed {
		if !checkpoint.CleanPath(p) {
			return nil, fmt.Errorf("removed %q: not a clean path beneath the root: %w", p, errDelta)
		}
		if i > 0 && removed[i-1] >= p {
			return nil, fmt.Errorf("removed %q: out of order or twice: %w", p, errDelta)
		}
		if _, ok := tree[p]; !ok {
			return nil, fmt.Errorf("removed %q, which its base does not have: %w", p, errDelta)
		}
		delete(tree, p)
	}
	for i, e := range changed {
		if !checkpoint.CleanPath(e.Path) {
			return nil, fmt.Errorf("entry %q: not a clean path beneath the root: %w", e.Path, errDelta)
		}
		if i > 0 && changed[i-1].Path >= e.Path {
			return nil, fmt.Errorf("entry %q: out of order or twice: %w", e.Path, errDelta)
		}
		if j := sort.SearchStrings(removed, e.Path); j < len(removed) && removed[j] == e.Path {
			return nil, fmt.Errorf("entry %q: both removed and changed: %w", e.Path, errDelta)
		}
		tree[e.Path] = e
	}
	out := make([]Entry, 0, len(tree))
	for _, e := range tree {
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
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
