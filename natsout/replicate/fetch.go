package replicate

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/internal/parallel"
)

// Reading a checkpoint back from the fleet, on a host taking the sandbox
// up: Fetch reads its manifest from the sandbox's KV, checks every entry
// (checkpoint.CheckEntries) before anything is fetched, brings into the
// local store only the objects it lacks, each checked against its name
// while it is written (a bad one is refused and nothing of it kept), and
// imports the checkpoint (checkpoint.Import). The broker is as trusted as
// the state directory for what it holds (the sandbox's token: InfoKey),
// but what it sends is checked as if it were not: a manifest is never
// taken for more than its entries' shape allows, an object never for
// more than its bytes hash to.

// ErrNoCheckpoint is Fetch's error when the fleet holds no checkpoint of
// the sandbox (or not the one asked for).
var ErrNoCheckpoint error = noCheckpoint{}

type noCheckpoint struct{}

func (noCheckpoint) Error() string        { return "the fleet holds no such checkpoint" }
func (noCheckpoint) Is(target error) bool { return target == fs.ErrNotExist }

// maxManifests bounds the manifests newest reads of one sandbox.
const maxManifests = 100_000

// maxObject bounds the size a manifest may claim for one file (16 TiB).
const maxObject = 1 << 44

// Fleet reads what the hosts replicated, on one connection.
type Fleet struct {
	js          jetstream.JetStream
	mu          sync.Mutex
	smallKV     jetstream.KeyValue // looked up once (small.go)
	smallLooked bool
}

// NewFleet reads the fleet through js.
func NewFleet(js jetstream.JetStream) *Fleet { return &Fleet{js: js} }

// Fleet is a reader of the fleet on the replicator's connection.
func (r *Replicator) Fleet() *Fleet { return NewFleet(r.js) }

// Fetched is what Fetch brought.
type Fetched struct {
	Checkpoint checkpoint.Checkpoint // as imported
	Host       string                // the host that sent the manifest
	Objects    int64                 // objects fetched (the store lacked them)
	Bytes      int64                 // their bytes
}

// bucket is the sandbox's KV (ErrNoCheckpoint when there is none).
func (f *Fleet) bucket(ctx context.Context, name string) (jetstream.KeyValue, error) {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	kv, err := f.js.KeyValue(cctx, BucketOf(name))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("sandbox %s: %w", name, ErrNoCheckpoint)
	}
	return kv, err
}

// Header is the header of the fleet's checkpoint id of the sandbox ("":
// the newest, by its seq, then its time), ErrNoCheckpoint when it holds
// none (or not that one).
func (f *Fleet) Header(ctx context.Context, name, id string) (Checkpoint, error) {
	if id == "" {
		return f.newest(ctx, name)
	}
	kv, err := f.bucket(ctx, name)
	if err != nil {
		return Checkpoint{}, err
	}
	if !checkpoint.ValidID(id) {
		return Checkpoint{}, fmt.Errorf("checkpoint %q: %w", id, ErrNoCheckpoint)
	}
	gctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	e, err := kv.Get(gctx, id)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Checkpoint{}, fmt.Errorf("sandbox %s, checkpoint %s: %w", name, id, ErrNoCheckpoint)
	} else if err != nil {
		return Checkpoint{}, err
	}
	h, ok := headerOf(e.Value(), id)
	if !ok {
		return Checkpoint{}, fmt.Errorf("manifest %s of sandbox %s: not one this host reads", id, name)
	}
	return h, nil
}

// headerOf is the checkpoint header of the manifest data of key id.
func headerOf(data []byte, id string) (Checkpoint, bool) {
	var h struct {
		Version    int        `json:"version"`
		Checkpoint Checkpoint `json:"checkpoint"`
	}
	if json.Unmarshal(data, &h) != nil || !knownVersion(h.Version) || h.Checkpoint.ID != id {
		return Checkpoint{}, false
	}
	return h.Checkpoint, true
}

// newest is the header of the newest checkpoint of the sandbox.
func (f *Fleet) newest(ctx context.Context, name string) (Checkpoint, error) {
	kv, err := f.bucket(ctx, name)
	if err != nil {
		return Checkpoint{}, err
	}
	l, err := kv.ListKeys(ctx)
	if errors.Is(err, jetstream.ErrNoKeysFound) {
		return Checkpoint{}, fmt.Errorf("sandbox %s: %w", name, ErrNoCheckpoint)
	} else if err != nil {
		return Checkpoint{}, err
	}
	defer l.Stop()
	var keys []string
	for k := range l.Keys() {
		if checkpoint.ValidID(k) && len(keys) < maxManifests {
			keys = append(keys, k)
		}
	}
	if err := ctx.Err(); err != nil {
		return Checkpoint{}, err
	}
	var best *Checkpoint
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			continue
		} else if err != nil {
			return Checkpoint{}, err
		}
		c, ok := headerOf(e.Value(), k)
		if !ok {
			continue // not a manifest this host can read
		}
		if best == nil || c.Seq > best.Seq || c.Seq == best.Seq && c.Created.After(best.Created) {
			best = &c
		}
	}
	if best == nil {
		return Checkpoint{}, fmt.Errorf("sandbox %s: %w", name, ErrNoCheckpoint)
	}
	return *best, nil
}

// Fetch brings the fleet's checkpoint id of the sandbox name ("": the
// newest) into sb's checkpoint store: the objects it lacks, then the
// checkpoint itself. sb must be a sandbox nothing else uses yet
// (checkpoint/import.go says why).
func (f *Fleet) Fetch(ctx context.Context, name, id string, sb *core.Sandbox) (Fetched, error) {
	var out Fetched
	if id == "" {
		h, err := f.newest(ctx, name)
		if err != nil {
			return out, err
		}
		id = h.ID
	}
	kv, obs, err := f.buckets(ctx, name, id)
	if err != nil {
		return out, err
	}
	if d, ok, err := readDelta(ctx, kv, obs, name, id, holds(sb)); err != nil {
		return out, fetchErr(name, id, err)
	} else if ok {
		return f.fetchDelta(ctx, obs, sb, d) // fetch_delta.go
	}
	m, err := manifestOf(ctx, kv, obs, name, id, sb)
	if err != nil {
		return out, err
	}
	entries, err := f.bring(ctx, obs, sb, id, m.Entries, checkpoint.CheckEntries, &out)
	if err != nil {
		return out, err
	}
	if out.Checkpoint, err = checkpoint.Import(sb, imported(m, out), entries); err != nil {
		return out, err
	}
	out.Host = m.Host
	return out, nil
}

// buckets are the sandbox name's KV and the objects' bucket, to read its
// checkpoint id from (ErrNoCheckpoint when id is not a checkpoint's).
func (f *Fleet) buckets(ctx context.Context, name, id string) (jetstream.KeyValue, jetstream.ObjectStore, error) {
	if !checkpoint.ValidID(id) {
		return nil, nil, fmt.Errorf("checkpoint %q: %w", id, ErrNoCheckpoint)
	}
	kv, err := f.bucket(ctx, name)
	if err != nil {
		return nil, nil, err
	}
	obs, err := f.objects(ctx)
	return kv, obs, err
}

// manifestOf reads the manifest id of the sandbox name (what sb's store
// holds of its chain read there), refused when it names another.
func manifestOf(ctx context.Context, kv jetstream.KeyValue, obs jetstream.ObjectStore, name, id string, sb *core.Sandbox) (Manifest, error) {
	m, err := ReadManifestLocal(ctx, kv, obs, id, StoreOf(sb))
	if err != nil {
		return m, fetchErr(name, id, err)
	}
	if m.Sandbox != name || m.Checkpoint.ID != id {
		return m, fmt.Errorf("manifest %s of sandbox %s names checkpoint %q of sandbox %q: refused", id, name, m.Checkpoint.ID, m.Sandbox)
	}
	return m, nil
}

// fetchErr is err of reading the manifest id of name, ErrNoCheckpoint
// when the KV lacks it.
func fetchErr(name, id string, err error) error {
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("sandbox %s, checkpoint %s: %w", name, id, ErrNoCheckpoint)
	}
	return err
}

// imported is the checkpoint of m as the store records it, its new bytes
// those fetched.
func imported(m Manifest, out Fetched) checkpoint.Checkpoint {
	c := m.Checkpoint
	return checkpoint.Checkpoint{ID: c.ID, Name: c.Name, Reason: c.Reason, Seq: c.Seq, Created: c.Created,
		NewBytes: out.Bytes, SkipExcluded: c.SkipExcluded}
}

// bring checks the entries ents of manifest id (checkEntries) and
// fetches the objects they name that sb's store lacks into it, counting
// them in out; it answers the entries in the store's form.
func (f *Fleet) bring(ctx context.Context, obs jetstream.ObjectStore, sb *core.Sandbox, id string, ents []Entry,
	check func([]checkpoint.Entry) error, out *Fetched) ([]checkpoint.Entry, error) {
	entries, missing, sizes, err := checkEntries(sb, id, ents, check)
	if err != nil {
		return nil, err
	}
	n, err := f.fetchAll(ctx, obs, storePut(sb), missing, sizes)
	if err != nil {
		return nil, err
	}
	out.Objects, out.Bytes = int64(len(missing)), n
	return entries, nil
}

// checkEntries checks the entries ents of manifest id (each alone, then
// with check) before anything is fetched, and the room sb's store has for
// the objects it lacks. It answers the entries in the store's form, the
// hashes of the objects the store lacks, and each object's size.
func checkEntries(sb *core.Sandbox, id string, ents []Entry, check func([]checkpoint.Entry) error) (
	entries []checkpoint.Entry, missing []string, sizes map[string]int64, err error) {
	entries = make([]checkpoint.Entry, len(ents))
	sizes = map[string]int64{}
	// Hashes in the entries' order, not sorted: the sender put the
	// objects in that order, so a batch of them is a run of the bucket's
	// stream, read from a few blocks, where sorted hashes would be spread
	// over all of it.
	var hashes []string
	for i, e := range ents {
		if e.Mode > 0o7777 {
			return nil, nil, nil, fmt.Errorf("manifest %s: entry %q: mode %o: refused", id, e.Path, e.Mode)
		}
		entries[i] = e.local()
		if e.Type != "file" {
			continue
		}
		if e.Size > maxObject {
			return nil, nil, nil, fmt.Errorf("manifest %s: entry %q: size %d: refused", id, e.Path, e.Size)
		}
		if s, ok := sizes[e.Hash]; ok && s != e.Size {
			return nil, nil, nil, fmt.Errorf("manifest %s: object %s named with two sizes: refused", id, e.Hash)
		} else if !ok {
			hashes = append(hashes, e.Hash)
		}
		sizes[e.Hash] = e.Size
	}
	if err := check(entries); err != nil {
		return nil, nil, nil, fmt.Errorf("manifest %s: %w: refused", id, err)
	}
	missing, err = checkpoint.MissingObjects(sb, hashes)
	if err != nil {
		return nil, nil, nil, err
	}
	var need int64
	for _, h := range missing {
		need = min(need+sizes[h], maxObject*maxManifests) // no overflow: past any bound anyway
	}
	if err := checkpoint.CheckRoom(sb, need); err != nil {
		return nil, nil, nil, fmt.Errorf("manifest %s: %w", id, err)
	}
	return entries, missing, sizes, nil
}

// putFunc takes the object hash of size bytes that r gives (checking it
// against its name) and answers the bytes it read.
type putFunc func(hash string, r io.Reader, size int64) (int64, error)

// storePut puts objects into sb's store.
func storePut(sb *core.Sandbox) putFunc {
	return func(hash string, r io.Reader, size int64) (int64, error) {
		o, err := checkpoint.PutObject(sb, hash, r, size)
		if err != nil {
			return 0, err
		}
		if o.Size != size {
			return 0, fmt.Errorf("%d bytes, the manifest says %d: refused", o.Size, size)
		}
		return o.Size, nil
	}
}

// fetchWorkers is how many objects a fetch asks for at once: each Get of
// the Object Store is several round trips to the broker (its info, a
// consumer, the chunks), so one at a time a tree of small files waits on
// latency, not bytes.
const fetchWorkers = 16

// fetchAll brings the objects hashes (of sizes) to put: the
// small ones in batches, the others (and what no batch brought) several
// at once; the first error stops the others and is answered. It answers
// the bytes fetched.
func (f *Fleet) fetchAll(ctx context.Context, obs jetstream.ObjectStore, put putFunc, hashes []string, sizes map[string]int64) (int64, error) {
	var small, large []string
	for _, h := range hashes {
		if sizes[h] <= SmallMax {
			small = append(small, h)
		} else {
			large = append(large, h)
		}
	}
	n, rest, err := f.fetchSmall(ctx, put, small, sizes) // fetch_batch.go
	if err != nil {
		return n, err
	}
	var total atomic.Int64
	total.Add(n)
	err = parallel.Each(ctx, fetchWorkers, append(rest, large...), func(ctx context.Context, h string) error {
		n, err := f.fetchObject(ctx, obs, put, h, sizes[h])
		total.Add(n)
		return err
	})
	return total.Load(), err
}

// A manifest is put after every object it names, so an object it names
// that the broker answers missing is more likely a failed load than a
// loss: nats-server folds any error loading a stored message into "404
// not found" (its direct get, a batch's too). Each one is asked again,
// missTries times at most, waiting missWait, then twice as long, between,
// before the fetch fails: about 3 s more, on a path that otherwise fails.
const (
	missTries = 5
	missWait  = 200 * time.Millisecond
)

// errMissing is an object neither bucket answers.
var errMissing = fmt.Errorf("not in the fleet's buckets: %w", fs.ErrNotExist)

// fetchObject brings the object hash of size bytes to put,
// asking again (missTries) while neither bucket answers it.
func (f *Fleet) fetchObject(ctx context.Context, obs jetstream.ObjectStore, put putFunc, hash string, size int64) (int64, error) {
	wait := missWait
	for try := 1; ; try++ {
		n, err := f.fetchOnce(ctx, obs, put, hash, size)
		if !errors.Is(err, errMissing) || try == missTries {
			return n, err
		}
		select {
		case <-ctx.Done():
			return 0, err
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// fetchOnce is one try of fetchObject.
func (f *Fleet) fetchOnce(ctx context.Context, obs jetstream.ObjectStore, put putFunc, hash string, size int64) (int64, error) {
	var r io.ReadCloser
	if size <= SmallMax {
		data, ok, err := f.getSmall(ctx, hash)
		if err != nil {
			return 0, fmt.Errorf("object %s: %w", hash, err)
		}
		if ok {
			r = io.NopCloser(bytes.NewReader(data))
		}
	}
	if r == nil {
		or, err := f.getLarge(ctx, obs, hash, size)
		if err != nil {
			return 0, err
		}
		r = or
	}
	defer r.Close()
	n, err := put(hash, r, size)
	if err != nil {
		return 0, fmt.Errorf("object %s: %w", hash, err)
	}
	return n, nil
}

// getLarge opens object hash of size bytes in the Object Store.
func (f *Fleet) getLarge(ctx context.Context, obs jetstream.ObjectStore, hash string, size int64) (io.ReadCloser, error) {
	// A large object is given time by its size (at 1 MiB/s at worst),
	// beyond one request's.
	if obs == nil {
		return nil, fmt.Errorf("object %s: %w", hash, errMissing)
	}
	octx, cancel := context.WithTimeout(ctx, opTimeout+time.Duration(size>>20)*time.Second)
	r, err := obs.Get(octx, hash)
	if errors.Is(err, jetstream.ErrObjectNotFound) {
		cancel()
		return nil, fmt.Errorf("object %s: %w", hash, errMissing)
	} else if err != nil {
		cancel()
		return nil, fmt.Errorf("object %s: %w", hash, err)
	}
	return cancelOnClose{r, cancel}, nil
}

// cancelOnClose is a reader whose context ends when it is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// objects is the fleet's objects bucket (nil when there is none yet: a
// manifest naming no file needs none).
func (f *Fleet) objects(ctx context.Context) (jetstream.ObjectStore, error) {
	cctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	obs, err := f.js.ObjectStore(cctx, ObjectsBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	return obs, err
}

// local is the checkpoint's form of a manifest's entry.
func (e Entry) local() checkpoint.Entry {
	m := fs.FileMode(e.Mode & 0o777)
	for _, b := range []struct {
		bit uint32
		m   fs.FileMode
	}{{0o4000, fs.ModeSetuid}, {0o2000, fs.ModeSetgid}, {0o1000, fs.ModeSticky}} {
		if e.Mode&b.bit != 0 {
			m |= b.m
		}
	}
	switch e.Type {
	case "dir":
		m |= fs.ModeDir
	case "symlink":
		m |= fs.ModeSymlink
	}
	return checkpoint.Entry{Path: e.Path, Type: e.Type, Mode: m, Uid: e.Uid, Gid: e.Gid, Mtime: e.Mtime,
		Size: e.Size, Target: e.Target, Hash: e.Hash}
}

// JetStream is the fleet's connection, for a reader of the stream on the
// same broker (natsout.After).
func (f *Fleet) JetStream() jetstream.JetStream { return f.js }
