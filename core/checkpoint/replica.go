package checkpoint

import (
	"io"
	"os"
	"sort"
	"sync"

	"sandfs/core"
)

// What a replicator (natsout/replicate) reads of the store: a hook told
// of each checkpoint written, a checkpoint's whole tree or what it changed
// since its parent, and an object by its hash. The hook runs with the
// store locked, so it must not block and must not call back into this
// package: it is meant to queue and return.

// hooks are the OnCreate functions of one sandbox (an attachment, so
// they go with it).
type hooks struct {
	mu   sync.Mutex
	next int
	fns  map[int]func(Checkpoint)
}

func (*hooks) Close() error { return nil }

type hooksKey struct{}

func hooksOf(s *core.Sandbox) *hooks {
	return s.Attachment(hooksKey{}, func() io.Closer { return &hooks{fns: map[int]func(Checkpoint){}} }).(*hooks)
}

// OnCreate calls fn after each checkpoint of s is written (asked,
// scheduled, before a restore or a merge), in the order they are made.
// fn runs with the store locked: it must return at once. remove stops it.
func OnCreate(s *core.Sandbox, fn func(Checkpoint)) (remove func()) {
	hs := hooksOf(s)
	hs.mu.Lock()
	id := hs.next
	hs.next++
	hs.fns[id] = fn
	hs.mu.Unlock()
	return func() {
		hs.mu.Lock()
		delete(hs.fns, id)
		hs.mu.Unlock()
	}
}

// created tells the hooks of s that cp was written.
func created(s *core.Sandbox, cp Checkpoint) {
	hs := hooksOf(s)
	hs.mu.Lock()
	defer hs.mu.Unlock()
	for _, fn := range hs.fns {
		fn(cp)
	}
}

// Entries is every path of the checkpoint id, sorted by path.
func Entries(s *core.Sandbox, id string) ([]Entry, error) {
	h, err := byID(s, id)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	t, err := h.tree(id)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(t.files))
	for p, e := range t.files {
		out = append(out, e.public(p))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out, nil
}

// Delta is what the checkpoint id changed since its parent, as its
// manifest keeps it: the entries set (sorted by path) and the paths
// deleted (sorted), for a sender that holds the parent's tree to send
// about the changes instead of the tree. parent is "" for a base (every
// entry, nothing else returned). A delta may set an entry as its parent
// had it (only its stat identity changed); unless exact, it may also
// delete a path its parent lacks (a checkpoint between was deleted and
// folded in).
func Delta(s *core.Sandbox, id string) (parent string, set []Entry, del []string, exact bool, err error) {
	h, err := byID(s, id)
	if err != nil {
		return "", nil, nil, false, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	hd, err := h.header(id)
	if err != nil || hd.Parent == "" {
		return "", nil, nil, false, err // a base's body, the whole tree, is not read
	}
	// Under mu, the file is the version the header is of: a compaction
	// or a fold rewrites both together.
	_, b, err := h.read(id, true)
	if err != nil {
		return "", nil, nil, false, err
	}
	set = make([]Entry, 0, len(b.Set))
	for p, e := range b.Set {
		set = append(set, e.public(p))
	}
	sort.Slice(set, func(i, j int) bool { return set[i].Path < set[j].Path })
	del = append([]string(nil), b.Del...)
	sort.Strings(del)
	return hd.Parent, set, del, hd.Exact, nil
}

// OpenObject opens the content whose SHA-256 is hash (fs.ErrNotExist once
// no checkpoint names it and the store swept it).
func OpenObject(s *core.Sandbox, hash string) (*os.File, error) {
	h, err := storeOf(s)
	if err != nil {
		return nil, err
	}
	return h.store.OpenObject(hash)
}
