package checkpoint

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint/cas"
	"sandfs/internal/parallel"
)

// Filling the store with a tree written from elsewhere (TreeWriter), once
// the sandbox serves it: each object the store lacks is read from the
// first of its files still as it was written (its stat identity, taken
// when it was made, unchanged) and checked against its name as it is
// stored (PutObject); an object no file holds as written any more is
// fetched again (fetch). Then the checkpoint is recorded (Import), with
// the files' identities (importKnown). Until then the store
// does not hold it: a lookup of it answers ErrStoring, and a checkpoint
// made meanwhile walks the whole tree, as the first after a restart does.
// The caller marks the checkpoint (Storing) before the sandbox is served,
// so no request sees it unknown in between. A sweep meanwhile (a failed
// checkpoint's, a delete's) keeps the objects Fill is storing.

// ErrStoring is the error of a lookup of a checkpoint that Fill is
// storing: it will be there, ask again.
var ErrStoring = errors.New("the checkpoint is being stored on this host from the tree it came with: ask again in a few seconds")

// Storing marks the checkpoint id of s as being stored: a lookup of it
// answers ErrStoring until done is called (once Fill ended).
func Storing(s *core.Sandbox, id string) (done func(), err error) {
	h, err := storeOf(s)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.storing == nil {
		h.storing = map[string]int{}
	}
	h.storing[id]++
	return sync.OnceFunc(func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.storing[id]--; h.storing[id] <= 0 {
			delete(h.storing, id)
		}
	}), nil
}

// FillStats says where Fill's objects came from.
type FillStats struct {
	FromTree int // read from the tree's files
	Fetched  int // fetched again: no file held them as written
}

// Fill stores the objects of entries (the tree of cp, from elsewhere,
// written into s's root by a TreeWriter, whose Finish answered ids) that
// the store lacks, then records cp (Import) with the files' identities.
// fetch puts the object hash into the store (PutObject) from elsewhere.
func Fill(ctx context.Context, s *core.Sandbox, cp Checkpoint, entries []Entry, ids Identities,
	fetch func(ctx context.Context, hash string) error) (Checkpoint, FillStats, error) {
	var out FillStats
	h, err := storeOf(s)
	if err != nil {
		return cp, out, err
	}
	hashes, byHash := byContent(entries)
	h.mu.Lock()
	h.keepObjects(hashes, 1) // no sweep takes them before the record names them
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.keepObjects(hashes, -1)
		h.mu.Unlock()
	}()
	missing, err := h.store.Missing(hashes)
	if err != nil {
		return cp, out, err
	}
	var fromTree, fetched atomic.Int64
	err = parallel.Each(ctx, runtime.GOMAXPROCS(0), missing, func(ctx context.Context, hash string) error {
		for _, e := range byHash[hash] {
			ok, err := storeFromTree(s, e, ids.m[e.Path])
			if err != nil {
				return err
			}
			if ok {
				fromTree.Add(1)
				return nil
			}
		}
		fetched.Add(1)
		return fetch(ctx, hash)
	})
	out.FromTree, out.Fetched = int(fromTree.Load()), int(fetched.Load())
	if err != nil {
		return cp, out, err
	}
	done, err := importKnown(s, cp, entries, ids.m)
	if err != nil {
		return cp, out, err
	}
	return done, out, nil
}

// keepObjects counts the objects hashes in (by) or out of those a sweep
// keeps though no record names them yet (Fill's); h.mu is held.
func (h *cpStore) keepObjects(hashes []string, by int) {
	if h.keep == nil {
		h.keep = map[string]int{}
	}
	for _, x := range hashes {
		if h.keep[x] += by; h.keep[x] <= 0 {
			delete(h.keep, x)
		}
	}
}

// storeFromTree stores the object of e, a file of the root, from it when
// it is as it was made (id: its identity then); false when it is not, or
// its bytes do not hash to the object's name.
func storeFromTree(s *core.Sandbox, e Entry, id cpEntry) (bool, error) {
	if id.Ino == 0 {
		return false, nil // not known as written
	}
	dirfd, name, err := s.Root().StrictParent(e.Path)
	if err != nil {
		return false, nil // moved or removed since: fetched again
	}
	defer unix.Close(dirfd)
	fd, err := unix.Openat(dirfd, name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return false, nil
	}
	f := os.NewFile(uintptr(fd), e.Path)
	defer f.Close()
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFREG || st.Dev != id.Dev || st.Ino != id.Ino ||
		st.Ctim.Nano() != id.Ctime || st.Size != e.Size {
		return false, nil // written since
	}
	_, err = PutObject(s, e.Hash, f, e.Size)
	if errors.Is(err, cas.ErrMismatch) {
		return false, nil
	}
	return err == nil, err
}
