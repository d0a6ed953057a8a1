package journal

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// References. Identical configs share one Watcher, but each Watch is its
// own reference with its own id, an alias of the shared watcher:
// "w_<hex>.<n>", n counting the watcher's creates. A reference is released
// once; releasing it again is ErrUnknownWatcher, so no client can end a
// shared watcher for the others by stopping it twice. Reads take either
// the watcher's id or a live reference. A watcher kept by a store from
// before references (a count, no ids) holds its count under its own id.
// A watcher holds at most MaxRefs references: a create past it drops the
// oldest (a client that went away without its DELETE leaks one, and this
// bounds what leaks), whose reads and DELETE are then 404, as for a
// watcher stopped.

// MaxRefs is the references one watcher holds at most.
const MaxRefs = 1024

// Watch returns a new reference to the watcher for cfg: an existing one
// with an equal config (reused), or a new one that sees events from now on.
// info.Ref is the reference's id.
func (j *Journal) Watch(cfg Config) (w *Watcher, info Info, reused bool, err error) {
	if w, info, reused, err = j.watch(cfg); err == nil {
		j.saveWatchers()
	}
	return w, info, reused, err
}

func (j *Journal) watch(cfg Config) (w *Watcher, info Info, reused bool, err error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	key := cfg.key()
	if w = j.byKey[key]; w == nil {
		if len(j.watchers) >= j.maxW {
			return nil, Info{}, false, ErrTooManyWatchers
		}
		var id [8]byte
		rand.Read(id[:])
		w = j.newWatcher("w_"+hex.EncodeToString(id[:]), cfg, j.now())
		w.start = j.seq
		j.watchers[w.ID] = w
		j.byKey[key] = w
	} else {
		reused = true
	}
	if len(w.refs) >= MaxRefs {
		w.dropOldest()
	}
	w.next++
	ref := w.ID + "." + strconv.Itoa(w.next)
	w.refs[ref] = 1
	info = w.info(j.seq)
	info.Ref = ref
	return w, info, reused, nil
}

// lookup is the watcher that id names, and whether id is a live
// reference (under j.mu).
func (j *Journal) lookup(id string) (w *Watcher, isRef bool) {
	base, _, _ := strings.Cut(id, ".")
	if w = j.watchers[base]; w == nil {
		return nil, false
	}
	if w.refs[id] > 0 {
		return w, true
	}
	if base != id { // a released or never given reference
		return nil, false
	}
	return w, false
}

// Watcher finds a live watcher by its id or by a live reference.
func (j *Journal) Watcher(id string) (*Watcher, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if w, _ := j.lookup(id); w != nil {
		return w, nil
	}
	return nil, ErrUnknownWatcher
}

// Release drops reference ref and stops the watcher at its last, waking
// its pollers. It returns the references left to the watcher. The
// watcher's own id is not a reference (unless a store kept it as one).
func (j *Journal) Release(ref string) (int, error) {
	n, err := j.release(ref)
	if err == nil {
		j.saveWatchers()
	}
	return n, err
}

func (j *Journal) release(ref string) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	w, isRef := j.lookup(ref)
	if w == nil {
		return 0, ErrUnknownWatcher
	}
	if !isRef {
		return 0, fmt.Errorf("%w: %s is the shared watcher, release the watcher_id a create answered", ErrUnknownWatcher, ref)
	}
	if w.refs[ref]--; w.refs[ref] == 0 {
		delete(w.refs, ref)
	}
	if n := w.count(); n > 0 {
		return n, nil
	}
	delete(j.watchers, w.ID)
	delete(j.byKey, w.key)
	w.close()
	return 0, nil
}

// dropOldest drops the reference with the lowest number (under the
// journal's lock).
func (w *Watcher) dropOldest() {
	oldest, low := "", -1
	for ref := range w.refs {
		n := refNum(ref) // 0: the watcher's own id, from a store of before references
		if low < 0 || n < low {
			oldest, low = ref, n
		}
	}
	delete(w.refs, oldest)
}

// refIDs is the live references' ids, in the order they were given (under
// the journal's lock).
func (w *Watcher) refIDs() []string {
	out := make([]string, 0, len(w.refs))
	for ref := range w.refs {
		out = append(out, ref)
	}
	for i := 1; i < len(out); i++ {
		for k := i; k > 0 && refLess(out[k], out[k-1]); k-- {
			out[k], out[k-1] = out[k-1], out[k]
		}
	}
	return out
}

// refLess orders references by their number (the watcher's own id, from a
// store of before references, first).
func refLess(a, b string) bool {
	return refNum(a) < refNum(b)
}

func refNum(ref string) int {
	_, num, _ := strings.Cut(ref, ".")
	n, err := strconv.Atoi(num)
	if err != nil {
		return 0
	}
	return n
}

// count is the references held (under the journal's lock).
func (w *Watcher) count() int {
	n := 0
	for _, c := range w.refs {
		n += c
	}
	return n
}

// restoreRefs gives a watcher back the references a store kept; a record
// with a count and no ids (from before references) holds it under the
// watcher's id.
func (w *Watcher) restoreRefs(r WatcherRecord) {
	for ref, n := range r.Aliases {
		if n > 0 && strings.HasPrefix(ref, w.ID+".") {
			w.refs[ref] = n
		}
	}
	if len(w.refs) == 0 {
		w.refs[w.ID] = max(r.Refs, 1)
	}
	w.next = r.Next
}

// record is the watcher as a store keeps it (under the journal's lock).
func (w *Watcher) record() WatcherRecord {
	refs := make(map[string]int, len(w.refs))
	for ref, n := range w.refs {
		refs[ref] = n
	}
	return WatcherRecord{ID: w.ID, Config: w.cfg, Created: w.created, StartSeq: w.start, Refs: w.count(), Aliases: refs, Next: w.next}
}
