package checkpoint

import (
	"context"
	"maps"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint/cas"
)

// journalComplete reports whether every change to the tree reaches the
// journal: the kernel watch runs, its first walk and the comparison at
// start (core/manifest.go) are done, and no directory went unwatched. Only then may a checkpoint trust the journal to name
// what changed; otherwise it walks the tree (still reading only files
// whose stat identity changed).
func journalComplete(s *core.Sandbox) bool {
	for _, ready := range []<-chan struct{}{s.Watch().Ready(), s.Reconciled()} {
		select {
		case <-ready:
		default:
			return false // the first walk, or the look for what changed while down, is not done
		}
	}
	return s.Watch().Running() && !s.Watch().Degraded()
}

// Unchanged reports whether the root of s is still the tree of checkpoint
// id, as Options.Unchanged vouches: id is the newest checkpoint made here
// (of the kind taken by default), the journal is complete (its kernel
// watch ran without a gap) and holds no event after id's seq.
func Unchanged(s *core.Sandbox, id string) bool {
	h, err := storeOf(s)
	if err != nil {
		return false
	}
	s.Watch().CatchUp() // what the kernel queued is in the journal
	if !journalComplete(s) {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hd, err := h.newestHeader(false)
	if err != nil || hd == nil || hd.ID != id || hd.Imported {
		return false
	}
	return s.Journal().Seq() == hd.Seq
}

// create finds the tree as it is now, starting from the newest checkpoint
// of the same SkipExcluded. With store it records it as a new checkpoint
// (contents in the store, manifest written); without, it is a dry run's
// look: contents hashed, nothing kept. h.mu is held.
func (h *cpStore) create(ctx context.Context, s *core.Sandbox, o Options, store bool) (Checkpoint, *cpTree, error) {
	if _, err := h.headers(); err != nil {
		return Checkpoint{}, nil, err
	}
	s.Watch().CatchUp()
	seq := s.Journal().Seq() // before the first look: every event <= seq is seen
	prev, err := h.newest(o.SkipExcluded)
	if err != nil {
		return Checkpoint{}, nil, err
	}
	var st *cas.Store
	if store {
		st = h.store
	}
	var pfiles map[string]cpEntry
	if prev != nil {
		pfiles = prev.files
	}
	b := newBuilder(ctx, s, h, pfiles, o.SkipExcluded, st)
	done := o.Unchanged != nil && prev != nil && prev.hdr.ID == o.Unchanged.Checkpoint && !prev.hdr.Imported && seq == o.Unchanged.Seq
	if !done && prev != nil && prev.hdr.Seq <= seq && (o.FromJournal || journalComplete(s)) {
		if done, err = b.since(prev.hdr.Seq, seq); err != nil {
			return Checkpoint{}, nil, err
		}
	}
	if !done {
		newBytes, newDisk := b.newBytes, b.newDisk.Load()
		b = newBuilder(ctx, s, h, pfiles, o.SkipExcluded, st)
		b.newBytes = newBytes
		b.newDisk.Store(newDisk)
		if err := b.full(); err != nil {
			return Checkpoint{}, nil, err
		}
	}

	files := pfiles
	if store && prev != nil && h.other == prev {
		h.other = nil // changed in place below: no longer that checkpoint's tree
	}
	if files == nil {
		files = map[string]cpEntry{}
	} else if !store {
		files = make(map[string]cpEntry, len(pfiles))
		for p, e := range pfiles {
			files[p] = e
		}
	}
	del := make([]string, 0, len(b.del))
	for p := range b.del {
		del = append(del, p)
	}
	body := cpBody{Set: b.set, Del: del}
	apply(files, body)

	cp := Checkpoint{Name: o.Name, Reason: o.Reason, Seq: seq, Created: time.Now().UTC(),
		NewBytes: b.newBytes, SkipExcluded: o.SkipExcluded, Identity: s.Identity()}
	for cp.ID = newCheckpointID(); ; cp.ID = newCheckpointID() {
		if _, taken := h.hdrs[cp.ID]; !taken {
			break
		}
	}
	countTree(files, &cp)
	hd := cpHeader{Checkpoint: cp}
	if prev == nil {
		body = cpBody{Set: files}
	} else {
		hd.Parent, hd.Depth, hd.Exact = prev.hdr.ID, h.chainDepth(prev.hdr)+1, true // gone() deletes only what prev has
	}
	t := &cpTree{hdr: hd, files: files}
	if !store {
		return cp, t, nil
	}
	h.last = nil // files may be prev's, changed: the cache holds only what was written
	if h.size >= 0 {
		h.size += b.newDisk.Load() // the objects added: no walk of the store per checkpoint
	}
	if err := h.store.Sync(); err != nil {
		return Checkpoint{}, nil, err
	}
	if err := h.write(hd, body); err != nil {
		return Checkpoint{}, nil, err
	}
	h.last = t
	created(s, cp)
	if hd.Depth >= compactEvery && !h.compactBusy {
		h.compactBusy = true
		h.compacting.Add(1)
		go h.compact(hd.ID)
	}
	return cp, t, nil
}

// compact rewrites the delta id as a base, after the checkpoint that made
// it has answered: writing 100,000 entries costs some 200 ms, which the
// checkpoint at the end of a long chain then does not pay. The entries
// are encoded with h.mu let go, so a restore, merge or checkpoint of the
// sandbox meanwhile does not wait them out either; the rename into place
// is under h.mu, and only when id's header is still the one read.
func (h *cpStore) compact(id string) {
	defer h.compacting.Done()
	h.mu.Lock()
	orig, files, ok := h.compactable(id)
	if !ok {
		h.compactBusy = false
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	hd := orig
	hd.Parent, hd.Depth = "", 0
	tmp, err := h.encode(hd, cpBody{Set: files})
	if compactEncoded != nil && err == nil {
		compactEncoded(id)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.compactBusy = false
	if err != nil {
		return // the chain stays; the next checkpoint tries again
	}
	if cur, err := h.header(id); h.closed || err != nil || !sameChain(cur, orig) {
		unix.Unlinkat(h.cps, tmp, 0) // deleted, or rewritten by a delete meanwhile
		return
	}
	if h.commit(hd, tmp) != nil {
		return
	}
	for _, t := range []*cpTree{h.last, h.other} {
		if t != nil && t.hdr.ID == id {
			t.hdr = hd
		}
	}
}

// chainDepth is how many deltas lie between hd's checkpoint and its
// base, as the headers are now: a compaction that ended after it was
// made (while the compaction encoded) shortened its chain, not its
// header. A store whose headers were never read ran no compaction
// (compact reads them), so hd's own count holds. h.mu is held.
func (h *cpStore) chainDepth(hd cpHeader) int {
	if h.hdrs == nil {
		return hd.Depth
	}
	d := 0
	for err := error(nil); err == nil && hd.Parent != "" && d < 4*compactEvery; hd, err = h.header(hd.Parent) {
		d++
	}
	return d
}

// compactEncoded, when set (by tests), is called by compact between the
// encode and the rename, with h.mu let go.
var compactEncoded func(id string)

// sameChain reports whether a and b, two reads of one checkpoint's
// header, place it alike: what a delete of its parent rewrites.
func sameChain(a, b cpHeader) bool {
	return a.Parent == b.Parent && a.Depth == b.Depth && a.Exact == b.Exact && a.Imported == b.Imported
}

// compactable answers the header of id and a copy of its whole tree
// (the cached one is changed in place by the next checkpoint), when id is
// a delta of a store not closed; h.mu is held.
func (h *cpStore) compactable(id string) (cpHeader, map[string]cpEntry, bool) {
	if h.closed {
		return cpHeader{}, nil, false
	}
	hd, err := h.header(id)
	if err != nil || hd.Parent == "" {
		return hd, nil, false // deleted, or made a base by a delete meanwhile
	}
	t, err := h.tree(id)
	if err != nil {
		return hd, nil, false // the chain stays; the next checkpoint tries again
	}
	return hd, maps.Clone(t.files), true
}

func countTree(files map[string]cpEntry, cp *Checkpoint) {
	for p, e := range files {
		switch e.Kind {
		case kindFile:
			cp.Files++
			cp.Bytes += e.Size
		case kindDir:
			if p != "/" {
				cp.Dirs++
			}
		case kindLink:
			cp.Symlinks++
		}
	}
}
