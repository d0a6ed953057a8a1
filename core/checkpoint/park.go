package checkpoint

import (
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
)

// A store closed after Park hands its newest tree to the next store
// opened on the same state directory soon after, in this process. A
// sandbox taken up on its old root is opened, restored and closed, then
// opened again to be served; a 100,000-file tree read back from its
// manifest costs some 0.4 s, and the served sandbox's next checkpoint
// (the move-out's, say) and its replication would read it again.
//
// A checkpoint's tree never changes once written (compaction rewrites
// how it is stored, not what it holds), so a parked tree is good for as
// long as its checkpoint exists: the open takes it only then, and keeps
// it as its newest only when it is (cpStore.cache). Only a tree made
// here is parked. One tree is parked at a time, for parkFor at most, so
// what this holds is bounded by one tree, for seconds; a plain Close
// parks nothing.
const parkFor = 10 * time.Second

var parked struct {
	mu    sync.Mutex
	key   [2]uint64 // the state directory's device and inode
	t     *cpTree
	timer *time.Timer
}

// stateKey is the identity of the state directory fd.
func stateKey(fd int) ([2]uint64, bool) {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return [2]uint64{}, false
	}
	return [2]uint64{st.Dev, st.Ino}, true
}

// Park has the sandbox s's checkpoint store, when it is closed, hand its
// newest tree to the next store opened on the same state directory: the
// caller opens one next.
func Park(s *core.Sandbox) {
	if h, err := storeOf(s); err == nil {
		h.mu.Lock()
		h.parking = true
		h.mu.Unlock()
	}
}

// park keeps h's newest tree for the next open of its state directory,
// when Park asked; h.mu is held, h closing.
func (h *cpStore) park() {
	t := h.last
	if !h.parking || t == nil || t.hdr.Imported {
		return
	}
	key, ok := stateKey(h.state)
	if !ok {
		return
	}
	parked.mu.Lock()
	defer parked.mu.Unlock()
	if parked.timer != nil {
		parked.timer.Stop()
	}
	parked.key, parked.t = key, t
	parked.timer = time.AfterFunc(parkFor, func() {
		parked.mu.Lock()
		if parked.t == t {
			parked.t = nil
		}
		parked.mu.Unlock()
	})
}

// unpark takes the tree parked for h's state directory, if any, and
// caches it when its checkpoint is still there; h.mu is held or h not
// yet shared.
func (h *cpStore) unpark() {
	key, ok := stateKey(h.state)
	if !ok {
		return
	}
	parked.mu.Lock()
	t := parked.t
	if t == nil || parked.key != key {
		parked.mu.Unlock()
		return
	}
	parked.t = nil
	parked.timer.Stop()
	parked.mu.Unlock()
	hdrs, err := h.headers()
	if err != nil {
		return
	}
	hd, ok := hdrs[t.hdr.ID]
	if !ok || hd.Imported {
		return // deleted since, or not this tree
	}
	h.cache(&cpTree{hdr: hd, files: t.files})
}
