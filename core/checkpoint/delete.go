package checkpoint

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// delete removes checkpoint id. Its children are rewritten first: a
// delta's child takes its delta folded into the child's own, a base's
// child becomes a base. Then every object no manifest names is swept.
func (h *cpStore) delete(id string) error {
	hd, err := h.header(id)
	if err != nil {
		return err
	}
	var mine cpBody
	for cid, chd := range h.hdrs {
		if chd.Parent != id {
			continue
		}
		if hd.Parent == "" {
			t, err := h.tree(cid)
			if err != nil {
				return err
			}
			chd.Parent, chd.Depth = "", 0
			if err := h.write(chd, cpBody{Set: t.files}); err != nil {
				return err
			}
			continue
		}
		if mine.Set == nil {
			if _, mine, err = h.read(id, true); err != nil {
				return err
			}
		}
		_, cb, err := h.read(cid, true)
		if err != nil {
			return err
		}
		chd.Parent, chd.Depth, chd.Exact = hd.Parent, max(chd.Depth-1, 1), false
		if err := h.write(chd, fold(mine, cb)); err != nil {
			return err
		}
	}
	if err := unix.Unlinkat(h.cps, id, 0); err != nil {
		return err
	}
	delete(h.hdrs, id)
	if h.last != nil && h.last.hdr.ID == id {
		h.last = nil
	}
	h.other = nil
	if h.last != nil {
		h.last.hdr = h.hdrs[h.last.hdr.ID]
	}
	return h.sweep()
}

// fold is the delta a then b.
func fold(a, b cpBody) cpBody {
	out := cpBody{Set: make(map[string]cpEntry, len(a.Set)+len(b.Set))}
	for p, e := range a.Set {
		out.Set[p] = e
	}
	dels := map[string]bool{}
	for _, p := range a.Del {
		dels[p] = true
	}
	for _, p := range b.Del {
		delete(out.Set, p)
		dels[p] = true
	}
	for p, e := range b.Set {
		out.Set[p] = e
		delete(dels, p)
	}
	for p := range dels {
		out.Del = append(out.Del, p)
	}
	return out
}

// sweep drops every object no manifest names (mark and sweep), and the
// temps a crashed put left, but those a Fill is storing (keep). The lock
// is held, so no checkpoint is being made whose objects no manifest names
// yet.
func (h *cpStore) sweep() error {
	if _, err := h.headers(); err != nil {
		return err // never sweep without knowing every manifest
	}
	marked := map[string]bool{}
	for x := range h.keep {
		marked[x] = true
	}
	for id := range h.hdrs {
		_, b, err := h.read(id, true)
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", id, err)
		}
		for _, e := range b.Set {
			if e.Hash != "" {
				marked[e.Hash] = true
			}
		}
	}
	_, _, disk, err := h.store.Sweep(func(hash string) bool { return marked[hash] })
	if err != nil {
		h.size = -1 // walked again when next asked
	} else if h.size >= 0 {
		h.size = max(h.size-disk, 0)
	}
	h.named(nil, true, err == nil)
	return err
}
