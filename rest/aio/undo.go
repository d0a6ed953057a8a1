package aio

import "sync"

// The anchored editor's undo history (edit.go): per file, bounded in
// steps and in bytes, in memory.

// undoStep is the state of a file before one edit.
type undoStep struct {
	content string
	existed bool
}

type undoFile struct {
	steps []undoStep
	used  uint64
}

// undoHistory is the editor's bounded undo history, keyed by API path.
type undoHistory struct {
	mu    sync.Mutex // held for a whole edit
	per   int
	max   int64
	total int64
	clock uint64
	files map[string]*undoFile
}

func newUndoHistory(per int, max int64) *undoHistory {
	return &undoHistory{per: per, max: max, files: map[string]*undoFile{}}
}

// push records st for p; h.mu is held.
func (h *undoHistory) push(p string, st undoStep) {
	size := int64(len(st.content))
	if size > h.max {
		return // larger than the whole history: not kept
	}
	h.clock++
	f := h.files[p]
	if f == nil {
		f = &undoFile{}
		h.files[p] = f
	}
	f.used = h.clock
	f.steps = append(f.steps, st)
	h.total += size
	if len(f.steps) > h.per {
		h.total -= int64(len(f.steps[0].content))
		f.steps = f.steps[1:]
	}
	for h.total > h.max {
		var lru string
		var oldest uint64
		for name, uf := range h.files {
			if lru == "" || uf.used < oldest {
				lru, oldest = name, uf.used
			}
		}
		uf := h.files[lru]
		h.total -= int64(len(uf.steps[0].content))
		uf.steps = uf.steps[1:]
		if len(uf.steps) == 0 {
			delete(h.files, lru)
		}
	}
}

// pop takes the last step recorded for p; h.mu is held.
func (h *undoHistory) pop(p string) (undoStep, bool) {
	f := h.files[p]
	if f == nil || len(f.steps) == 0 {
		return undoStep{}, false
	}
	st := f.steps[len(f.steps)-1]
	f.steps = f.steps[:len(f.steps)-1]
	h.total -= int64(len(st.content))
	h.clock++
	f.used = h.clock
	if len(f.steps) == 0 {
		delete(h.files, p)
	}
	return st, true
}

// depth is the number of steps kept for p (tests).
func (h *undoHistory) depth(p string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if f := h.files[p]; f != nil {
		return len(f.steps)
	}
	return 0
}
