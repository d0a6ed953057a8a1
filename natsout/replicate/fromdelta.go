package replicate

import (
	"sort"

	"sandfs/core/checkpoint"
)

// A manifest made from the store's own delta of its checkpoint: when the
// checkpoint's parent in the store is the checkpoint whose manifest was
// sent last, the store's delta is the manifest's, and making it costs
// about the changes, where comparing the trees (fromTree) costs about the
// tree. Two things of the store's delta are not the fleet's: an entry
// whose stat identity alone changed (the fleet's entry holds), and a path
// deleted that the parent lacks (a folded delta, not exact). With the
// tree sent last kept (s.last) both are left out; without it (a seed
// that read no tree, seed.go) only an exact delta is sent this way, its
// unchanged entries and all.

// storeDelta is checkpoint.Delta's answer for one checkpoint.
type storeDelta struct {
	parent string // "": a base in the store
	set    []checkpoint.Entry
	del    []string
	exact  bool
}

// fromDelta is cp's manifest as a delta of the manifest sent last, made
// from d, the store's delta of cp. ok is false when it cannot be made so:
// no base known, the chain at its bound, another parent, a base in the
// store, a delta not exact while no tree is kept, or one no smaller than
// the tree.
func (s *sandbox) fromDelta(cp checkpoint.Checkpoint, d storeDelta) (out outgoing, ok bool) {
	if s.lastID == "" || s.chain >= s.r.chainMax() || d.parent == "" || d.parent != s.lastID || s.last == nil && !d.exact {
		return out, false
	}
	m := Manifest{Version: ManifestVersion, Sandbox: s.name, Host: s.r.cfg.Host, Checkpoint: header(cp),
		Base: s.lastID, Chain: s.chain + 1}
	added := map[string]bool{} // objects offered the fleet
	for _, e := range d.set {
		ent := EntryOf(e)
		if old, had := s.last[e.Path]; had && sameEntry(old, ent) {
			continue // only its stat identity changed: the fleet's entry holds
		}
		m.Entries = append(m.Entries, ent)
		if e.Type == "file" && !s.prev[e.Hash] && !added[e.Hash] {
			added[e.Hash] = true
			out.files = append(out.files, e)
		}
	}
	for _, p := range d.del {
		i := sort.Search(len(d.set), func(i int) bool { return d.set[i].Path >= p })
		if i < len(d.set) && d.set[i].Path == p {
			continue // set again after
		}
		if _, had := s.last[p]; s.last != nil && !had {
			continue // not in the base: a folded delta's
		}
		m.Removed = append(m.Removed, p)
	}
	if int64(len(m.Entries)+len(m.Removed)) >= cp.Files+cp.Dirs+cp.Symlinks+1 { // the tree, its root too
		return outgoing{}, false
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
		if s.last != nil {
			for _, p := range m.Removed {
				delete(s.last, p)
			}
			for _, e := range m.Entries {
				s.last[e.Path] = e
			}
		}
		s.lastID, s.chain = cp.ID, m.Chain
	}
	return out, true
}
