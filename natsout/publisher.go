package natsout

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"sandfs/core/journal"
)

// StreamName is the one stream every host publishes to; StreamSubjects its
// subjects; DuplicateWindow how long JetStream remembers a message id.
const (
	StreamName      = "SANDFS"
	StreamSubjects  = "sandfs.>"
	DuplicateWindow = 10 * time.Minute
	// CursorKey is the history meta key of the published cursor.
	CursorKey = "nats_cursor"
)

const (
	cursorEvery = 256             // save the cursor after this many acks
	inFlight    = 256             // publishes waiting for their acks at most
	idleRescan  = 2 * time.Second // scan even without a wake-up
	retryWait   = 500 * time.Millisecond
	ackTimeout  = 5 * time.Second
)

// Meta keeps the cursor: *history.Log (Meta, SetMeta) is one.
type Meta interface {
	Meta(key string) (string, error)
	SetMeta(key, value string) error
}

// Source is one sandbox to publish.
type Source struct {
	Name    string
	Journal *journal.Journal
	Meta    Meta // the durable journal's store (required: see Start)
}

// Config says where to publish.
type Config struct {
	URL  string // nats://HOST:PORT
	Host string // this host's name in subjects and ids
	Log  *slog.Logger
}

// Stats is one sandbox's publishing, for /metrics.
type Stats struct {
	Backlog   uint64 // journal seq minus the published cursor
	Published uint64 // messages acked since start
	Failed    uint64 // publish attempts that failed since start
	Lost      uint64 // events retention dropped before they were published
	Duplicate uint64 // messages the stream acked as duplicates of ones it had (not stored again)
}

// Publisher publishes the journals of some sandboxes.
type Publisher struct {
	cfg    Config
	nc     *nats.Conn
	js     jetstream.JetStream
	ctx    context.Context // the publishers' (Start's, until Close)
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	streamOK bool
	outs     map[string]*out
}

// Start connects (retrying in the background while the broker is down: it
// never fails for that) and starts one publisher goroutine per source.
func Start(ctx context.Context, cfg Config, srcs []Source) (*Publisher, error) {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	nc, js, err := Dial(cfg.URL, "sandfs "+cfg.Host, jetstream.WithPublishAsyncMaxPending(inFlight), jetstream.WithPublishAsyncTimeout(ackTimeout))
	if err != nil {
		return nil, fmt.Errorf("events: %w", err)
	}
	ctx, cancel := context.WithCancel(ctx)
	p := &Publisher{cfg: cfg, nc: nc, js: js, ctx: ctx, cancel: cancel, outs: map[string]*out{}}
	for _, s := range srcs {
		if err := p.Add(s); err != nil {
			p.Close()
			return nil, err
		}
	}
	return p, nil
}

// Add publishes one more sandbox (one that appeared after Start). A name
// published already is an error.
func (p *Publisher) Add(s Source) error {
	if s.Meta == nil {
		return fmt.Errorf("events: sandbox %s has no durable journal to queue events in", s.Name)
	}
	ctx, cancel := context.WithCancel(p.ctx)
	o := &out{p: p, src: s, wake: make(chan struct{}, 1), cancel: cancel, done: make(chan struct{})}
	p.mu.Lock()
	if _, ok := p.outs[s.Name]; ok {
		p.mu.Unlock()
		cancel()
		return fmt.Errorf("events: sandbox %s is published already", s.Name)
	}
	p.outs[s.Name] = o
	p.mu.Unlock()
	o.removeHook = s.Journal.OnAppend(journal.Hook{Queue: func(journal.Event, bool) {
		select { // never blocks the appender
		case o.wake <- struct{}{}:
		default:
		}
	}})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		defer close(o.done)
		o.run(ctx)
	}()
	return nil
}

// Remove stops publishing the sandbox name (its cursor saved), and returns
// once its publisher ended. An unknown name is nothing to do.
func (p *Publisher) Remove(name string) {
	p.mu.Lock()
	o := p.outs[name]
	delete(p.outs, name)
	p.mu.Unlock()
	if o != nil {
		o.cancel()
		<-o.done
	}
}

// Flush waits, up to d, until every event the journal of sandbox name
// holds now is published: what a sandbox being deleted told last reaches
// the fleet before it goes. It reports how many were left unpublished
// (the broker away past d), which the caller says.
func (p *Publisher) Flush(name string, d time.Duration) uint64 {
	p.mu.Lock()
	o := p.outs[name]
	p.mu.Unlock()
	if o == nil {
		return 0
	}
	target := o.src.Journal.Seq()
	deadline := time.Now().Add(d)
	for {
		o.mu.Lock()
		c := o.cursor
		o.mu.Unlock()
		if c >= target {
			return 0
		}
		if !time.Now().Before(deadline) {
			return target - c
		}
		select {
		case o.wake <- struct{}{}:
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Close stops the publishers (saving their cursors) and the connection.
func (p *Publisher) Close() {
	p.cancel()
	p.wg.Wait()
	p.nc.Close()
}

// Stats reports each sandbox's publishing.
func (p *Publisher) Stats() map[string]Stats {
	p.mu.Lock()
	outs := make([]*out, 0, len(p.outs))
	for _, o := range p.outs {
		outs = append(outs, o)
	}
	p.mu.Unlock()
	m := make(map[string]Stats, len(outs))
	for _, o := range outs {
		m[o.src.Name] = o.stats()
	}
	return m
}

// ensureStream makes the stream if it is missing (once per connection's
// life: a stream another host made is used as it is).
func (p *Publisher) ensureStream(ctx context.Context) error {
	p.mu.Lock()
	ok := p.streamOK
	p.mu.Unlock()
	if ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, ackTimeout)
	defer cancel()
	_, err := p.js.Stream(ctx, StreamName)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = p.js.CreateStream(ctx, jetstream.StreamConfig{Name: StreamName, Subjects: []string{StreamSubjects},
			Duplicates: DuplicateWindow, Storage: jetstream.FileStorage})
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			err = nil // another publisher made it meanwhile
		}
	}
	if err == nil {
		p.mu.Lock()
		p.streamOK = true
		p.mu.Unlock()
	}
	return err
}

// JetStream is the publisher's connection to the fleet's broker, for a
// reader of the stream on the same broker (After).
func (p *Publisher) JetStream() jetstream.JetStream { return p.js }
