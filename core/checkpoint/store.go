package checkpoint

import (
	"bufio"
	"encoding/gob"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint/cas"
	"sandfs/internal/dirent"
)

// compactEvery is how long a chain of deltas may grow: the checkpoint at
// depth compactEvery is rewritten whole (a base) once it has answered.
const compactEvery = 32

// objectsDir is the state directory's content store.
const objectsDir = "objects"

// The kinds of entry a checkpoint records.
const (
	kindFile uint8 = 'f'
	kindDir  uint8 = 'd'
	kindLink uint8 = 'l'
)

// cpEntry is one path of a checkpoint as its manifest keeps it: what a
// restore puts back, and the stat identity (Dev, Ino, Size, Mtime, Ctime)
// a later checkpoint compares to know the content unchanged.
type cpEntry struct {
	Kind     uint8
	Perm     uint32 // mode & 07777
	Uid, Gid uint32
	Mtime    int64 // Unix ns
	Size     int64
	Target   string // symlink
	Hash     string // file
	Dev, Ino uint64
	Ctime    int64 // Unix ns
}

func (e cpEntry) public(ap string) Entry {
	c := Entry{Path: ap, Uid: e.Uid, Gid: e.Gid, Mtime: time.Unix(0, e.Mtime), Size: e.Size, Target: e.Target, Hash: e.Hash}
	m := e.Perm
	switch e.Kind {
	case kindDir:
		c.Type, m = "dir", m|unix.S_IFDIR
	case kindLink:
		c.Type, m = "symlink", m|unix.S_IFLNK
	default:
		c.Type, m = "file", m|unix.S_IFREG
	}
	c.Mode = core.FileMode(m)
	return c
}

// cpHeader is the first value of a manifest file.
type cpHeader struct {
	Checkpoint
	Parent string // "" for a base, which holds every entry
	Depth  int    // deltas between it and its base
	// Exact: a delta whose Del names only paths its parent has, as a
	// checkpoint or an import writes one; a delta folded into its
	// grandparent (delete.go) may name a path neither had.
	Exact bool
	// Imported is a checkpoint made elsewhere (Import, or ImportDelta:
	// then a delta of a checkpoint this store holds): its seq is
	// another journal's and its entries carry no stat identity (unless
	// its tree was written here: Fill), so it is the next
	// checkpoint's base only in a store holding none of its own (newest).
	Imported bool
}

// cpBody is the second: every entry (a base), or what changed since the
// parent (a delta).
type cpBody struct {
	Set map[string]cpEntry
	Del []string
}

// cpTree is the whole tree of one checkpoint.
type cpTree struct {
	hdr   cpHeader
	files map[string]cpEntry
}

// cpStore is a sandbox's checkpoints: the state directory's checkpoints/
// (one manifest per checkpoint) and objects/ (package cas), the headers of
// every manifest, and the whole tree of the newest checkpoint written,
// which the next one starts from. mu serializes every operation.
type cpStore struct {
	mu         sync.Mutex
	mat        sync.Mutex // one materialization at a time (materialize.go), outside mu
	state      int        // the state directory
	cps        int        // checkpoints/
	store      *cas.Store
	hdrs       map[string]cpHeader
	last       *cpTree        // the newest checkpoint this process wrote or loaded
	other      *cpTree        // the last other tree read back (Entry of one checkpoint, path after path)
	compacting sync.WaitGroup // compact goroutines (close waits for them)
	// compactBusy: a compaction runs; none other starts meanwhile (a
	// checkpoint made while it encodes counts its depth from the chain
	// not yet rewritten, and would start another of nearly the same tree).
	compactBusy bool
	closed      bool
	parking     bool  // Park: Close hands the newest tree on (park.go)
	maxBytes    int64 // the store's bound (bound.go); 0 or less: none
	size        int64 // the store's size on disk, -1 until walked again
	// clean: the store was opened clean and nothing was put since;
	// loose: objects put that no manifest names yet; unswept: a sweep
	// failed (clean.go).
	cleanMu        sync.Mutex
	clean, unswept bool
	loose          map[string]bool
	storing        map[string]int // checkpoints being stored (fill.go's Storing); mu held
	keep           map[string]int // objects a sweep keeps, named by no record yet (fill.go); mu held
	reads          atomic.Int64   // files read (content hashed)
	walks          atomic.Int64   // checkpoints that walked the whole tree
}

// cpStoreRef opens a Sandbox's cpStore on first use. It is the sandbox's
// attachment (core.Sandbox.Attachment), so the sandbox's Close closes it.
type cpStoreRef struct {
	once  sync.Once
	h     *cpStore
	err   error
	ready atomic.Pointer[cpStore] // h once opened, for readers that must not open it
}

// storeKey keys the checkpoint store among a sandbox's attachments.
type storeKey struct{}

// refOf is the sandbox's cpStoreRef (nothing opened yet).
func refOf(s *core.Sandbox) *cpStoreRef {
	return s.Attachment(storeKey{}, func() io.Closer { return &cpStoreRef{} }).(*cpStoreRef)
}

// storeOf is the sandbox's checkpoints, opened on first use.
func storeOf(s *core.Sandbox) (*cpStore, error) {
	if s.StateDir() == "" {
		return nil, ErrNoState
	}
	r := refOf(s)
	r.once.Do(func() {
		r.h, r.err = openCpStore(s.StateDir(), s.CheckpointMaxSize())
		r.ready.Store(r.h)
	})
	return r.h, r.err
}

// Close releases the store's fds (core.Sandbox.Close), waiting for an
// operation in flight.
func (r *cpStoreRef) Close() error {
	r.once.Do(func() { r.err = ErrNoState }) // none opened: none will be
	r.ready.Store(nil)
	if h := r.h; h != nil {
		h.mu.Lock()
		h.closed = true
		h.mu.Unlock()
		h.compacting.Wait()
		h.mu.Lock()
		defer h.mu.Unlock()
		h.closeClean()
		h.park()
		h.store.Close()
		unix.Close(h.cps)
		unix.Close(h.state)
		r.h, r.err = nil, fmt.Errorf("checkpoints: %w", unix.EBADF)
	}
	return nil
}

// openCpStore opens the store in dir, bounded to maxBytes (0: half the
// state filesystem; below 0: no bound; bound.go).
func openCpStore(dir string, maxBytes int64) (*cpStore, error) {
	state, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open state directory: %w", err)
	}
	if maxBytes == 0 {
		maxBytes = defaultCheckpointMax(dir)
	}
	h := &cpStore{state: state, maxBytes: maxBytes, size: -1}
	if err := unix.Mkdirat(state, "checkpoints", 0o700); err != nil && err != unix.EEXIST {
		unix.Close(state)
		return nil, fmt.Errorf("make checkpoints directory: %w", err)
	}
	if h.cps, err = unix.Openat(state, "checkpoints", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0); err != nil {
		unix.Close(state)
		return nil, fmt.Errorf("open checkpoints directory: %w", err)
	}
	if h.store, err = cas.Open(state, objectsDir); err != nil {
		unix.Close(h.cps)
		unix.Close(state)
		return nil, fmt.Errorf("open the content store: %w", err)
	}
	// What a daemon killed in the middle of a checkpoint stored is named
	// by no manifest: swept at the store's first use, unless it was
	// closed clean (clean.go).
	if size, ok := readClean(state); ok {
		h.size, h.clean = size, true
	} else {
		h.sweep()
	}
	h.unpark()
	return h, nil
}

// FilesRead counts the files checkpoints read since the sandbox was
// opened (their content re-hashed): what an incremental checkpoint spares.
func FilesRead(s *core.Sandbox) int64 {
	h, err := storeOf(s)
	if err != nil {
		return 0
	}
	return h.reads.Load()
}

func newCheckpointID() string { return fmt.Sprintf("cp_%012x", rand.Uint64()&(1<<48-1)) }

// ValidID reports whether id has the shape of a checkpoint id.
func ValidID(id string) bool { return validID(id) }

// validID reports whether id has the shape of a checkpoint id (it names a
// file in checkpoints/: nothing else may reach openat).
func validID(id string) bool {
	if len(id) != 15 || !strings.HasPrefix(id, "cp_") {
		return false
	}
	return cas.ValidHash(id[3:] + strings.Repeat("0", 52))
}

// headers are the headers of every manifest, read once.
func (h *cpStore) headers() (map[string]cpHeader, error) {
	if h.hdrs != nil {
		return h.hdrs, nil
	}
	names, err := dirent.Names(h.cps)
	if err != nil {
		return nil, err
	}
	hdrs := map[string]cpHeader{}
	for _, n := range names {
		if !validID(n) {
			continue // a temp of a crashed write
		}
		hd, _, err := h.read(n, false)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", n, err)
		}
		hdrs[n] = hd
	}
	h.hdrs = hdrs
	return hdrs, nil
}

func (h *cpStore) header(id string) (cpHeader, error) {
	hdrs, err := h.headers()
	if err != nil {
		return cpHeader{}, err
	}
	hd, ok := hdrs[id]
	if !ok && h.storing[id] > 0 {
		return cpHeader{}, fmt.Errorf("%q: %w", id, ErrStoring)
	} else if !ok || !validID(id) {
		return cpHeader{}, fmt.Errorf("%q: %w", id, ErrUnknown)
	}
	return hd, nil
}

// read decodes the manifest id: its header, and its body when asked.
func (h *cpStore) read(id string, body bool) (cpHeader, cpBody, error) {
	fd, err := unix.Openat(h.cps, id, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return cpHeader{}, cpBody{}, err
	}
	f := os.NewFile(uintptr(fd), id)
	defer f.Close()
	dec := gob.NewDecoder(bufio.NewReaderSize(f, 1<<16))
	var hd cpHeader
	var b cpBody
	if err := dec.Decode(&hd); err != nil {
		return hd, b, err
	}
	if body {
		err = dec.Decode(&b)
	}
	return hd, b, err
}

// write writes the manifest of hd and b (temp, fsync, rename, fsync of
// the directory).
func (h *cpStore) write(hd cpHeader, b cpBody) error {
	tmp, err := h.encode(hd, b)
	if err != nil {
		return err
	}
	return h.commit(hd, tmp)
}

// encode writes hd and b to a new temp file of the checkpoints'
// directory, synced, and answers its name. It needs no lock: nothing
// else names the temp.
func (h *cpStore) encode(hd cpHeader, b cpBody) (string, error) {
	tmp := fmt.Sprintf(".tmp-%016x", rand.Uint64())
	fd, err := unix.Openat(h.cps, tmp, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), tmp)
	w := bufio.NewWriterSize(f, 1<<16)
	enc := gob.NewEncoder(w)
	err = enc.Encode(hd)
	if err == nil {
		err = enc.Encode(b)
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		unix.Unlinkat(h.cps, tmp, 0)
		return "", err
	}
	return tmp, nil
}

// commit renames the temp tmp (encode's, of hd) into place as
// checkpoint hd.ID; h.mu is held.
func (h *cpStore) commit(hd cpHeader, tmp string) error {
	if err := unix.Renameat(h.cps, tmp, h.cps, hd.ID); err != nil {
		unix.Unlinkat(h.cps, tmp, 0)
		return err
	}
	if h.hdrs != nil {
		h.hdrs[hd.ID] = hd
	}
	return unix.Fsync(h.cps)
}

// tree is the whole tree of checkpoint id: its base with every delta
// after it applied.
func (h *cpStore) tree(id string) (*cpTree, error) {
	if h.last != nil && h.last.hdr.ID == id {
		return h.last, nil
	}
	if h.other != nil && h.other.hdr.ID == id {
		return h.other, nil
	}
	hd, err := h.header(id)
	if err != nil {
		return nil, err
	}
	chain := []string{id}
	for p := hd.Parent; p != ""; {
		phd, err := h.header(p)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: its parent %s: %w", id, p, err)
		}
		chain = append(chain, p)
		p = phd.Parent
	}
	var files map[string]cpEntry
	for i := len(chain) - 1; i >= 0; i-- {
		_, b, err := h.read(chain[i], true)
		if err != nil {
			return nil, fmt.Errorf("checkpoint %s: %w", chain[i], err)
		}
		if files == nil {
			files = b.Set
			if files == nil {
				files = map[string]cpEntry{}
			}
			continue
		}
		apply(files, b)
	}
	t := &cpTree{hdr: hd, files: files}
	h.cache(t)
	return t, nil
}

// cache keeps t, just read or written: as the newest tree when it is the
// tree the next checkpoint of its kind starts from and was made here
// (an imported tree is that only while none made here is), else as the
// other tree. So a take-up that reads the tree it sent, imports the
// fleet's and restores to it reads neither back. h.mu is held.
func (h *cpStore) cache(t *cpTree) {
	// h.last holds one kind: a tree of the other kind does not push out
	// the newest of the kind checkpoints are taken of.
	if !t.hdr.Imported && (h.last == nil || h.last.hdr.SkipExcluded == t.hdr.SkipExcluded) {
		if nh, err := h.newestHeader(t.hdr.SkipExcluded); err == nil && nh != nil && nh.ID == t.hdr.ID {
			h.last = t
			return
		}
	}
	h.other = t
}

func apply(files map[string]cpEntry, b cpBody) {
	for _, p := range b.Del {
		delete(files, p)
	}
	for p, e := range b.Set {
		files[p] = e
	}
}

// newest is the newest checkpoint whose SkipExcluded is skip, nil when
// none: the one the next checkpoint is a delta of. One made here wins
// over any imported: a tree imported into a store that has its own (a
// sandbox taken up again on a host that kept its old root) is not what
// the root holds until a restore wrote it, and the restore's own
// checkpoint must find the root from the tree last seen there.
func (h *cpStore) newest(skip bool) (*cpTree, error) {
	if h.last != nil && h.last.hdr.SkipExcluded == skip {
		return h.last, nil // made here: create sets it
	}
	best, err := h.newestHeader(skip)
	if err != nil || best == nil {
		return nil, err
	}
	return h.tree(best.ID)
}

// newestHeader is the header of newest's tree (nil: none).
func (h *cpStore) newestHeader(skip bool) (*cpHeader, error) {
	hdrs, err := h.headers()
	if err != nil {
		return nil, err
	}
	var best, own *cpHeader
	newer := func(hd cpHeader, than *cpHeader) bool {
		return than == nil || hd.Seq > than.Seq || hd.Seq == than.Seq && hd.Created.After(than.Created)
	}
	for _, hd := range hdrs {
		if hd.SkipExcluded != skip {
			continue
		}
		if newer(hd, best) {
			hd := hd
			best = &hd
		}
		if !hd.Imported && newer(hd, own) {
			hd := hd
			own = &hd
		}
	}
	if own != nil {
		return own, nil
	}
	return best, nil
}
