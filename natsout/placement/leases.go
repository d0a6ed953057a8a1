package placement

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"sandfs/natsout"
)

// opTimeout bounds one Acquire, Release or move against the broker.
const opTimeout = 5 * time.Second

// Config says where the leases are and who holds them.
type Config struct {
	URL  string        // nats://HOST:PORT
	Host string        // this host's name (--events-host): the holder in a Record
	Self string        // this host's URL (--advertise), in every Record it writes
	TTL  time.Duration // the lease's life unrenewed (0: DefaultTTL; the bucket's wins)
	Log  *slog.Logger
	// Lost is told, in a goroutine of its own, of a lease lost while held:
	// the host must stop serving the sandbox.
	Lost func(name string, why Loss)
}

// Leases are the leases one daemon holds, and the fleet's placement as
// its watch of the bucket knows it.
type Leases struct {
	cfg    Config
	nc     *nats.Conn
	js     jetstream.JetStream
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	kvb     jetstream.KeyValue // nil until made or found
	ttl     time.Duration      // the bucket's
	held    map[string]*lease  // by name
	taking  map[string]bool    // an Acquire under way
	seen    map[string]seenRec // the watch's view, by key
	watched bool               // the watch has replayed the bucket once
}

// Start connects (in the background while the broker is down: it never
// fails for that) and starts the watch.
func Start(ctx context.Context, cfg Config) (*Leases, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.TTL < MinTTL {
		return nil, fmt.Errorf("placement: a lease TTL of %v is under %v", cfg.TTL, MinTTL)
	}
	nc, js, err := natsout.Dial(cfg.URL, "sandfs placement "+cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("placement: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	l := &Leases{cfg: cfg, nc: nc, js: js, ctx: ctx, cancel: cancel, ttl: cfg.TTL,
		held: map[string]*lease{}, taking: map[string]bool{}, seen: map[string]seenRec{}}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		l.watch(ctx)
	}()
	return l, nil
}

// TTL is the leases' TTL: the bucket's once it was found.
func (l *Leases) TTL() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ttl
}

// Host is this host's name.
func (l *Leases) Host() string { return l.cfg.Host }

// kv is the bucket, made when missing.
func (l *Leases) kv(ctx context.Context) (jetstream.KeyValue, error) {
	l.mu.Lock()
	kv := l.kvb
	l.mu.Unlock()
	if kv != nil {
		return kv, nil
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	cfg := jetstream.KeyValueConfig{Bucket: Bucket, Description: "sandfs placement: which host holds each sandbox",
		TTL: l.cfg.TTL, LimitMarkerTTL: l.cfg.TTL, Storage: jetstream.FileStorage}
	kv, err := natsout.KeyValue(ctx, l.js, cfg)
	if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
		l.cfg.Log.Warn("placement: the broker writes no markers when a key expires (nats-server before 2.11); an expired lease is forgotten after 1.5 TTL")
		cfg.LimitMarkerTTL = 0
		kv, err = natsout.KeyValue(ctx, l.js, cfg)
	}
	if err != nil {
		return nil, err
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kvb == nil {
		if ttl := st.TTL(); ttl > 0 && ttl != l.cfg.TTL {
			l.cfg.Log.Warn("placement: the bucket's lease TTL differs from --lease-ttl; using the bucket's",
				"bucket", Bucket, "ttl", ttl, "lease_ttl", l.cfg.TTL)
			l.ttl = ttl
		} else if ttl <= 0 {
			l.cfg.Log.Warn("placement: the bucket has no TTL: a lease of a host that died never expires", "bucket", Bucket)
		}
		l.kvb = kv
	}
	return l.kvb, nil
}

// Acquire takes the lease of name for this host: nil when taken,
// *HeldError when another host holds it, ErrBroker when the broker did
// not answer (nothing is known: try again later), ErrHeldHere when this
// daemon holds it already.
func (l *Leases) Acquire(ctx context.Context, name string) error {
	l.mu.Lock()
	if l.held[name] != nil || l.taking[name] {
		l.mu.Unlock()
		return ErrHeldHere
	}
	l.taking[name] = true
	l.mu.Unlock()
	defer func() {
		l.mu.Lock()
		delete(l.taking, name)
		l.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	kv, err := l.kv(ctx)
	if err != nil {
		return brokerErr("acquire", name, err)
	}
	key := KeyOf(name)
	now := time.Now().UTC()
	rec := Record{Name: name, Host: l.cfg.Host, URL: l.cfg.Self, State: Serving, Since: now, Renewed: now, Lease: newLeaseID()}
	data, _ := json.Marshal(rec)
	for range 3 {
		sent := time.Now()
		rev, err := kv.Create(ctx, key, data)
		if err == nil {
			l.hold(rec, rev, sent)
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) {
			return brokerErr("acquire", name, err)
		}
		e, err := kv.Get(ctx, key)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue // released or expired meanwhile
		}
		if err != nil {
			return brokerErr("acquire", name, err)
		}
		var cur Record
		if err := json.Unmarshal(e.Value(), &cur); err != nil || cur.Host != l.cfg.Host {
			if cur.Name == "" {
				cur.Name = name
			}
			return &HeldError{Record: cur}
		}
		// This host's own: its earlier run's (killed before the TTL ran
		// out) or handed to it. Taken over on its revision.
		sent = time.Now()
		rev, err = kv.Update(ctx, key, data, e.Revision())
		if err == nil {
			l.cfg.Log.Info("placement: took over the lease this host's name held", "sandbox", name, "was", cur.State, "since", cur.Since)
			l.hold(rec, rev, sent)
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return brokerErr("acquire", name, err)
		}
	}
	return brokerErr("acquire", name, errors.New("the key kept changing"))
}

// Holds reports whether this daemon holds name's lease.
func (l *Leases) Holds(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.held[name] != nil
}

// Release gives the lease of name up: its renewal ends and the key is
// deleted on the revision last written (one another host wrote stays).
// A lease not held is nil.
func (l *Leases) Release(ctx context.Context, name string) error {
	ls := l.drop(name)
	if ls == nil {
		return nil
	}
	ls.stop()
	kv, err := l.kv(ctx)
	if err != nil {
		return brokerErr("release", name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, opTimeout)
	defer cancel()
	ls.mu.Lock()
	rev, id := ls.rev, ls.rec.Lease
	ls.mu.Unlock()
	err = kv.Delete(ctx, ls.key, jetstream.LastRevision(rev))
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		// A renewal cut short by the stop may have landed: still this
		// holding's, it is deleted on that revision; another's stays.
		e, gerr := kv.Get(ctx, ls.key)
		var cur Record
		if gerr != nil || json.Unmarshal(e.Value(), &cur) != nil || cur.Lease == "" || cur.Lease != id {
			return nil
		}
		err = kv.Delete(ctx, ls.key, jetstream.LastRevision(e.Revision()))
	}
	if err != nil {
		return brokerErr("release", name, err)
	}
	return nil
}

// drop takes name's lease out of the held ones.
func (l *Leases) drop(name string) *lease {
	l.mu.Lock()
	defer l.mu.Unlock()
	ls := l.held[name]
	delete(l.held, name)
	return ls
}

// SetMoving marks the lease of name "moving" (to: the host it goes to,
// "" when not known yet), or "serving" again when moving is false.
func (l *Leases) SetMoving(ctx context.Context, name string, moving bool, to string) error {
	l.mu.Lock()
	ls := l.held[name]
	l.mu.Unlock()
	if ls == nil {
		return ErrNotHeld
	}
	return ls.write(ctx, func(r *Record) {
		r.State, r.To = Serving, ""
		if moving {
			r.State, r.To = Moving, to
		}
	})
}

// Handoff writes host toHost (at toURL) as the holder of name, "moving",
// and stops renewing it: toHost's Acquire takes it over within the TTL,
// or it expires. The caller has stopped serving the sandbox first. with
// fills the record's move fields (moves.go).
func (l *Leases) Handoff(ctx context.Context, name, toHost, toURL string, with ...func(*Record)) error {
	l.mu.Lock()
	ls := l.held[name]
	l.mu.Unlock()
	if ls == nil {
		return ErrNotHeld
	}
	err := ls.write(ctx, func(r *Record) {
		*r = Record{Name: name, Host: toHost, URL: toURL, State: Moving, Since: time.Now().UTC(), To: toHost}
		for _, f := range with {
			f(r)
		}
	})
	if err != nil {
		return err
	}
	if l.drop(name) == ls {
		ls.stop()
	}
	return nil
}

// Close stops every renewal, releases every lease still held (each
// bounded), and closes the connection.
func (l *Leases) Close() {
	l.mu.Lock()
	names := make([]string, 0, len(l.held))
	for n := range l.held {
		names = append(names, n)
	}
	l.mu.Unlock()
	for _, n := range names {
		if err := l.Release(context.Background(), n); err != nil {
			l.cfg.Log.Warn("placement: releasing a lease at shutdown; it expires after its TTL", "sandbox", n, "err", err)
		}
	}
	l.cancel()
	l.wg.Wait()
	l.nc.Close()
}
