package replicate

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core"
	"sandfs/natsout"
)

const (
	// queueMax bounds the checkpoints waiting per sandbox; past it they are
	// found again in the store (doc.go).
	queueMax   = 64
	opTimeout  = 10 * time.Second // one request to the broker
	retryFirst = 250 * time.Millisecond
	retryMax   = 10 * time.Second
	// rescanEvery is how often an idle replicator lists the store again,
	// forgetting the ids of deleted checkpoints: what it remembers as sent
	// stays the size of the store.
	rescanEvery = 5 * time.Minute
)

// Config says where to replicate.
type Config struct {
	URL  string // nats://HOST:PORT
	Host string // this host's name, in manifests and the connection's name
	Log  *slog.Logger
}

// Stats is one sandbox's replication, for /metrics.
type Stats struct {
	Behind      uint64 // checkpoints made and not yet in the fleet
	BytesBehind uint64 // the content those checkpoints added to the local store
	Objects     uint64 // objects sent since start
	ObjectBytes uint64 // their bytes
	// EntriesObjects and EntriesBytes are the part of Objects and
	// ObjectBytes that are manifests' entries sent as an object (a
	// manifest too large for its KV value), not a file's content.
	EntriesObjects uint64
	EntriesBytes   uint64
	Manifests      uint64 // manifests sent since start
	Unqueued       uint64 // checkpoints the full queue did not hold (caught up from the store)
	Failed         uint64 // sends that failed (tried again)
}

// Replicator replicates the checkpoints of some sandboxes on one
// connection.
type Replicator struct {
	cfg    Config
	nc     *nats.Conn
	js     jetstream.JetStream
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	maxInline int // tests: the largest manifest kept inline (0: by the broker's max payload)
	queueMax  int // the bound of each sandbox's queue (queueMax; tests lower it)
	maxChain  int // tests: the deltas sent after a full manifest (0: deltaChain)

	mu      sync.Mutex
	obs     jetstream.ObjectStore // nil until made or found
	smallKV jetstream.KeyValue    // nil until made or found (small.go)
	reps    map[string]*sandbox
}

// Start connects (retrying in the background while the broker is down: it
// never fails for that). Sandboxes are added with Add.
func Start(ctx context.Context, cfg Config) (*Replicator, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	nc, js, err := natsout.Dial(cfg.URL, "sandfs replicate "+cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("replicate: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Replicator{cfg: cfg, nc: nc, js: js, ctx: ctx, cancel: cancel, queueMax: queueMax, reps: map[string]*sandbox{}}, nil
}

// Add replicates the checkpoints of sb (those it holds now, then each one
// made) under name. A name replicated already is an error.
func (r *Replicator) Add(name string, sb *core.Sandbox) error {
	if sb.StateDir() == "" {
		return fmt.Errorf("replicate: sandbox %s keeps no state, so no checkpoints", name)
	}
	ctx, cancel := context.WithCancel(r.ctx)
	s := newSandbox(r, name, sb, cancel)
	r.mu.Lock()
	if _, ok := r.reps[name]; ok {
		r.mu.Unlock()
		cancel()
		return fmt.Errorf("replicate: sandbox %s is replicated already", name)
	}
	r.reps[name] = s
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer close(s.done)
		s.run(ctx)
	}()
	return nil
}

// Remove stops replicating name and returns once its goroutine ended
// (what it had not sent waits in the store for the next start).
func (r *Replicator) Remove(name string) {
	r.mu.Lock()
	s := r.reps[name]
	delete(r.reps, name)
	r.mu.Unlock()
	if s != nil {
		s.cancel()
		<-s.done
	}
}

// Close stops every sandbox's replication and the connection.
func (r *Replicator) Close() {
	r.cancel()
	r.wg.Wait()
	r.nc.Close()
}

// Stats reports the sandbox's replication (false: not replicated).
func (r *Replicator) Stats(name string) (Stats, bool) {
	r.mu.Lock()
	s := r.reps[name]
	r.mu.Unlock()
	if s == nil {
		return Stats{}, false
	}
	return s.stats(), true
}

// objects is the objects bucket, made when missing.
func (r *Replicator) objects(ctx context.Context) (jetstream.ObjectStore, error) {
	return held(r, &r.obs, ctx, func(ctx context.Context) (jetstream.ObjectStore, error) {
		return natsout.ObjectStore(ctx, r.js, jetstream.ObjectStoreConfig{Bucket: ObjectsBucket,
			Description: "sandfs checkpoint contents, each named by its SHA-256", Storage: jetstream.FileStorage})
	})
}

// held is the fleet's bucket in *slot, found or made by mk the first time
// (r.mu guards the slot, not the broker's round trip).
func held[T comparable](r *Replicator, slot *T, ctx context.Context, mk func(context.Context) (T, error)) (T, error) {
	r.mu.Lock()
	v := *slot
	r.mu.Unlock()
	var none T
	if v != none {
		return v, nil
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	v, err := mk(ctx)
	if err != nil {
		return none, err
	}
	r.mu.Lock()
	*slot = v
	r.mu.Unlock()
	return v, nil
}

// manifests is the sandbox's KV bucket, made when missing.
func (r *Replicator) manifests(ctx context.Context, name string) (jetstream.KeyValue, error) {
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	return natsout.KeyValue(ctx, r.js, jetstream.KeyValueConfig{Bucket: BucketOf(name),
		Description: "sandfs checkpoint manifests of sandbox " + name, Storage: jetstream.FileStorage})
}

// chainMax is how many deltas a sandbox sends after a full manifest.
func (r *Replicator) chainMax() int {
	if r.maxChain > 0 {
		return r.maxChain
	}
	return deltaChain
}

// inlineMax is the largest manifest kept whole in its KV value: the
// broker's max payload less room for the message's headers.
func (r *Replicator) inlineMax() int {
	if r.maxInline > 0 {
		return r.maxInline
	}
	mp := r.nc.MaxPayload()
	if mp <= 0 {
		mp = 1 << 20 // the server's default, until connected
	}
	return int(mp) - 16<<10
}
