package replicate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/internal/parallel"
)

var errNotConnected = errors.New("not connected to the broker")

// sandbox is the replication of one sandbox: the hook's queue, and the
// goroutine that sends.
type sandbox struct {
	r      *Replicator
	name   string
	sb     *core.Sandbox
	log    *slog.Logger
	wake   chan struct{}
	cancel context.CancelFunc
	done   chan struct{} // closed when run returned

	mu    sync.Mutex
	queue []checkpoint.Checkpoint // from the hook, in the order made, at most queueMax
	todo  []checkpoint.Checkpoint // being sent, in order
	scan  bool                    // list the store (at start, and after the queue overflowed)
	// unqueued* are the checkpoints the full queue turned away since the
	// last scan: behind, but not in queue or todo.
	unqueued, unqueuedBytes uint64
	// listing* are what was behind when the store's listing began, still
	// counted until the listing replaces todo.
	listing, listingBytes uint64
	st                    Stats // the counters (Behind, BytesBehind computed in stats)
	info                  *Info // to put in the KV (Describe), nil when put

	// Only run's goroutine uses these.
	sent map[string]bool // checkpoint ids whose manifest is in the KV
	// prev are objects known in the bucket: those of the last tree
	// compared (fromTree) and of the deltas sent after it (fromDelta).
	prev map[string]bool
	// last are the entries (by path) of the manifest sent last, lastID its
	// checkpoint: the base of the next delta; after a start, what the
	// fleet holds (seed.go). lastID "": none (the next manifest is full);
	// last nil beside a lastID: its tree not read yet (learn reads it
	// when a send compares trees).
	// chain counts the deltas since the last full manifest.
	last   map[string]Entry
	lastID string
	chain  int
	kv     jetstream.KeyValue // nil until made or found
	down   bool               // the last send failed (said once in the log)
}

func newSandbox(r *Replicator, name string, sb *core.Sandbox, cancel context.CancelFunc) *sandbox {
	return &sandbox{r: r, name: name, sb: sb, log: r.cfg.Log.With("sandbox", name), wake: make(chan struct{}, 1),
		cancel: cancel, done: make(chan struct{}), scan: true, sent: map[string]bool{}}
}

// hook queues cp (checkpoint.OnCreate: the store is locked, so it only
// appends and wakes).
func (s *sandbox) hook(cp checkpoint.Checkpoint) {
	s.mu.Lock()
	if len(s.queue) < s.r.queueMax {
		s.queue = append(s.queue, cp)
	} else {
		if s.unqueued == 0 {
			// Logged from a goroutine: the hook must not wait on the log's writer.
			go s.log.Warn("replicate: the queue of checkpoints to send is full; the ones that follow are sent from the store later",
				"queued", s.r.queueMax, "checkpoint", cp.ID)
		}
		s.scan = true
		s.unqueued++
		s.unqueuedBytes += uint64(max(cp.NewBytes, 0))
		s.st.Unqueued++
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *sandbox) stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Behind = uint64(len(s.todo)+len(s.queue)) + s.unqueued + s.listing
	st.BytesBehind = s.unqueuedBytes + s.listingBytes
	for _, l := range [][]checkpoint.Checkpoint{s.todo, s.queue} {
		for _, cp := range l {
			st.BytesBehind += uint64(max(cp.NewBytes, 0))
		}
	}
	return st
}

func (s *sandbox) run(ctx context.Context) {
	remove := checkpoint.OnCreate(s.sb, s.hook)
	defer remove()
	var wait time.Duration
	for ctx.Err() == nil {
		more, err := s.step(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.mu.Lock()
			s.st.Failed++
			s.mu.Unlock()
			if !s.down {
				s.log.Warn("replicate: sending a checkpoint failed; trying again", "err", err)
				s.down = true
			}
			wait = min(max(2*wait, retryFirst), retryMax)
		case err != nil:
			return
		case more:
			wait = 0
			continue
		default:
			wait = 0
		}
		after := time.After(rescanEvery)
		if wait > 0 {
			after = time.After(wait)
		}
		select {
		case <-ctx.Done():
			return
		case <-after:
			if wait == 0 {
				s.mu.Lock()
				s.scan = true
				s.mu.Unlock()
			}
		case <-s.wake:
			if wait > 0 { // a new checkpoint does not shorten the backoff
				select {
				case <-ctx.Done():
					return
				case <-time.After(wait):
				}
			}
		}
	}
}

// step sends the oldest checkpoint waiting; more is whether others wait.
func (s *sandbox) step(ctx context.Context) (more bool, err error) {
	if err := s.sendInfo(ctx); err != nil {
		return false, err
	}
	s.mu.Lock()
	scan := s.scan
	if scan {
		// What is queued now is in the list taken below (the hook runs
		// after the checkpoint is written, List after the store's lock).
		s.listing, s.listingBytes = s.unqueued+uint64(len(s.queue)), s.unqueuedBytes
		for _, cp := range s.queue {
			s.listingBytes += uint64(max(cp.NewBytes, 0))
		}
		s.scan, s.queue, s.unqueued, s.unqueuedBytes = false, nil, 0, 0
	} else if len(s.todo) == 0 {
		s.todo, s.queue = s.queue, nil
	}
	s.mu.Unlock()
	if scan {
		list, err := checkpoint.List(s.sb)
		if err != nil {
			s.mu.Lock()
			s.scan = true
			s.unqueued += s.listing
			s.unqueuedBytes += s.listingBytes
			s.listing, s.listingBytes = 0, 0
			s.mu.Unlock()
			return false, fmt.Errorf("listing the checkpoints: %w", err)
		}
		todo := list[:0]
		sent := make(map[string]bool, len(s.sent))
		for _, cp := range list {
			if s.sent[cp.ID] {
				sent[cp.ID] = true // the ids of deleted checkpoints go
			} else {
				todo = append(todo, cp)
			}
		}
		s.sent = sent
		s.mu.Lock()
		s.todo = todo
		s.listing, s.listingBytes = 0, 0
		s.mu.Unlock()
	}
	s.mu.Lock()
	if len(s.todo) == 0 {
		more = len(s.queue) > 0 || s.scan
		s.mu.Unlock()
		return more, nil
	}
	cp := s.todo[0]
	s.mu.Unlock()
	if !s.r.nc.IsConnected() {
		// Not a request that would wait its timeout: the backoff's next
		// try finds the connection back sooner.
		return false, errNotConnected
	}
	if err := s.send(ctx, cp); err != nil {
		return false, err
	}
	if s.down {
		s.log.Info("replicate: sending again", "checkpoint", cp.ID)
		s.down = false
	}
	s.mu.Lock()
	s.todo = s.todo[1:]
	more = len(s.todo) > 0 || len(s.queue) > 0 || s.scan
	s.mu.Unlock()
	return more, nil
}

// send sends cp's objects the bucket lacks, then its manifest.
func (s *sandbox) send(ctx context.Context, cp checkpoint.Checkpoint) error {
	if s.sent[cp.ID] {
		return nil
	}
	if _, err := s.bucket(ctx); err != nil {
		return err
	}
	gctx, cancel := context.WithTimeout(ctx, opTimeout)
	_, err := s.kv.Get(gctx, cp.ID)
	cancel()
	if err == nil {
		s.sent[cp.ID] = true // sent before (another run of this host)
		return nil
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return err
	}
	obs, err := s.r.objects(ctx)
	if err != nil {
		return fmt.Errorf("the objects' bucket: %w", err)
	}
	var d storeDelta
	d.parent, d.set, d.del, d.exact, err = checkpoint.Delta(s.sb, cp.ID)
	if errors.Is(err, checkpoint.ErrUnknown) {
		return nil // deleted before its turn: nothing to send
	} else if err != nil {
		return err
	}
	if s.prev == nil {
		s.seed(ctx, obs, cp, d.parent) // seed.go
	}
	out, ok := s.fromDelta(cp, d) // fromdelta.go
	if !ok {
		if out, err = s.fromTree(ctx, obs, cp); errors.Is(err, checkpoint.ErrUnknown) {
			return nil // deleted meanwhile
		} else if err != nil {
			return err
		}
	}
	if err := s.sendObjects(ctx, obs, out.files); errors.Is(err, fs.ErrNotExist) {
		if _, err := checkpoint.ByID(s.sb, cp.ID); errors.Is(err, checkpoint.ErrUnknown) {
			return nil // deleted meanwhile, and its objects swept
		}
		return err
	} else if err != nil {
		return err
	}
	data, err := s.encode(ctx, obs, out.m)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	_, err = s.kv.Create(pctx, cp.ID, data)
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("manifest %s: %w", cp.ID, err)
	}
	if err == nil {
		s.mu.Lock()
		s.st.Manifests++
		s.mu.Unlock()
	}
	// Else the KV's value is not the one encoded here: no base for a delta.
	out.done(err == nil)
	s.sent[cp.ID] = true
	return nil
}

// outgoing is one manifest to send and what sending it changes.
type outgoing struct {
	m     Manifest           // as sent: a delta, or full
	files []checkpoint.Entry // a file of each object the fleet may lack
	// done records it sent: ours, the KV holds this manifest (the base of
	// the next delta); else another value was there.
	done func(ours bool)
}

// fromTree is cp's manifest made from its whole tree: full, or a delta of
// the manifest sent last (s.delta) found by comparing the trees.
func (s *sandbox) fromTree(ctx context.Context, obs jetstream.ObjectStore, cp checkpoint.Checkpoint) (outgoing, error) {
	if s.last == nil && s.lastID != "" {
		s.learn(ctx, obs, s.lastID) // seed.go
	}
	entries, err := checkpoint.Entries(s.sb, cp.ID)
	if err != nil {
		return outgoing{}, err
	}
	m := Manifest{Version: ManifestVersion, Sandbox: s.name, Host: s.r.cfg.Host, Checkpoint: header(cp),
		Entries: make([]Entry, 0, len(entries))}
	objs := map[string]bool{}
	var files []checkpoint.Entry
	for _, e := range entries {
		m.Entries = append(m.Entries, EntryOf(e))
		if e.Type != "file" || objs[e.Hash] {
			continue
		}
		objs[e.Hash] = true
		if !s.prev[e.Hash] {
			files = append(files, e)
		}
	}
	byPath, delta := s.delta(m)
	chain := s.chain
	return outgoing{m: delta, files: files, done: func(ours bool) {
		s.last, s.lastID, s.chain = nil, "", 0
		if ours {
			s.last, s.lastID = byPath, cp.ID
			if delta.Base != "" {
				s.chain = chain + 1
			}
		}
		s.prev = objs
	}}, nil
}

// bucket is the sandbox's KV, made when missing.
func (s *sandbox) bucket(ctx context.Context) (jetstream.KeyValue, error) {
	if s.kv == nil {
		kv, err := s.r.manifests(ctx, s.name)
		if err != nil {
			return nil, fmt.Errorf("the manifests' bucket: %w", err)
		}
		s.kv = kv
	}
	return s.kv, nil
}

// encode is the manifest's KV value: its entries (and removals) inline
// when they fit a message, else sent as an object first and named.
func (s *sandbox) encode(ctx context.Context, obs jetstream.ObjectStore, m Manifest) ([]byte, error) {
	data, err := json.Marshal(m)
	if err != nil || len(data) <= s.r.inlineMax() {
		return data, err
	}
	ents, err := json.Marshal(body{Entries: m.Entries, Removed: m.Removed})
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(ents)
	name := hex.EncodeToString(sum[:])
	if err := s.putObject(ctx, obs, name, true, func() (int64, error) {
		_, err := obs.PutBytes(ctx, name, ents)
		return int64(len(ents)), err
	}); err != nil {
		return nil, fmt.Errorf("the entries of manifest %s: %w", m.Checkpoint.ID, err)
	}
	m.Entries, m.Removed, m.EntriesObject = nil, nil, name
	return json.Marshal(m)
}

// sendWorkers is how many objects a send puts at once: each put asks the
// bucket for the object's info first and is several round trips, so one
// at a time a tree of small files waits on latency, not bytes.
const sendWorkers = 16

// sendObjects sends the objects of files, several at once; the first error
// stops the others and is answered.
func (s *sandbox) sendObjects(ctx context.Context, obs jetstream.ObjectStore, files []checkpoint.Entry) error {
	return parallel.Each(ctx, sendWorkers, files, func(ctx context.Context, e checkpoint.Entry) error {
		var err error
		if e.Size <= SmallMax {
			err = s.sendSmall(ctx, e.Hash) // small.go
		} else {
			err = s.sendObject(ctx, obs, e.Hash)
		}
		if err != nil {
			return fmt.Errorf("object %s of %s: %w", e.Hash, e.Path, err)
		}
		return nil
	})
}

// sendObject sends the store's object hash unless the bucket has it.
func (s *sandbox) sendObject(ctx context.Context, obs jetstream.ObjectStore, hash string) error {
	return s.putObject(ctx, obs, hash, false, func() (int64, error) {
		f, err := checkpoint.OpenObject(s.sb, hash)
		if err != nil {
			return 0, err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return 0, err
		}
		_, err = obs.Put(ctx, jetstream.ObjectMeta{Name: hash}, f)
		return fi.Size(), err
	})
}

// putObject runs put unless the bucket has an object name, and counts it
// (entries: a manifest's entries, counted apart too).
func (s *sandbox) putObject(ctx context.Context, obs jetstream.ObjectStore, name string, entries bool, put func() (int64, error)) error {
	ictx, cancel := context.WithTimeout(ctx, opTimeout)
	_, err := obs.GetInfo(ictx, name)
	cancel()
	if err == nil {
		return nil // sent before, by this host or another
	} else if !errors.Is(err, jetstream.ErrObjectNotFound) {
		return err
	}
	n, err := put()
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.st.Objects++
	s.st.ObjectBytes += uint64(n)
	if entries {
		s.st.EntriesObjects++
		s.st.EntriesBytes += uint64(n)
	}
	s.mu.Unlock()
	return nil
}
