package journal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"sandfs/core/pathmatch"
)

// Limits of watchers.
const (
	MaxWatchers = 128    // per journal
	BufferSize  = 10_000 // events a watcher keeps
)

// Errors of the watcher registry.
var (
	ErrTooManyWatchers = errors.New("too many watchers")
	ErrUnknownWatcher  = errors.New("unknown watcher")
	ErrWatcherClosed   = errors.New("watcher stopped")
	// ErrStoreUnavailable is what a read of the durable journal fails
	// with when its database cannot answer (damaged, or unable to store
	// what it must read back); the error says why.
	ErrStoreUnavailable = errors.New("the journal's database is unavailable")
)

// Config is what a watcher watches. Two creates with equal configs share a
// watcher.
type Config struct {
	Path      string // clean API path
	Recursive bool
	Debounce  time.Duration
	Exclude   []string // nil: DefaultExcludes; empty: none
	Include   []string
}

func (c Config) key() string {
	ex := c.Exclude
	if ex == nil {
		ex = DefaultExcludes
	}
	return fmt.Sprintf("%q %v %d %q %q", c.Path, c.Recursive, c.Debounce, ex, c.Include)
}

// Watcher is a filtered, buffered view of a journal.
type Watcher struct {
	ID      string
	cfg     Config
	exclude []string
	key     string
	created time.Time
	refs    map[string]int // reference id → references it holds, under the journal's lock (refs.go)
	next    int            // the number of the next reference id
	start   uint64         // the journal's seq when the watcher began hearing events
	j       *Journal
	dropped *atomic.Uint64 // the journal's count of dropped events

	mu          sync.Mutex
	queue       []*pending // waiting for their debounce, in order
	latest      map[string]*pending
	quiet       map[string]time.Time // path → end of the window opened by a write told
	buf         []Event              // a ring once full: the oldest at head
	head        int
	lostThrough uint64
	changed     chan struct{} // closed and replaced when buf or lostThrough change
	timer       *time.Timer
	closed      bool
}

type pending struct {
	e        Event
	deadline time.Time
	dead     bool // coalesced into a later write
}

// Info describes a watcher.
type Info struct {
	ID            string
	Config        Config
	Created       time.Time
	InitialCursor uint64
	Refs          int    // references held, all clients together
	Ref           string // the reference a Watch gave: the id its caller polls and releases
}

func (j *Journal) newWatcher(id string, cfg Config, created time.Time) *Watcher {
	w := &Watcher{
		ID:      id,
		cfg:     cfg,
		exclude: cfg.Exclude,
		key:     cfg.key(),
		created: created,
		refs:    map[string]int{},
		latest:  map[string]*pending{},
		quiet:   map[string]time.Time{},
		changed: make(chan struct{}),
		dropped: &j.dropped,
		j:       j,
	}
	if w.exclude == nil {
		w.exclude = DefaultExcludes
	}
	return w
}

func (w *Watcher) info(seq uint64) Info {
	return Info{ID: w.ID, Config: w.cfg, Created: w.created, InitialCursor: seq, Refs: w.count()}
}

// Watchers describes the live watchers, oldest first: one Info per live
// reference (Ref set), so that each client finds the watcher_id its
// create answered.
func (j *Journal) Watchers() []Info {
	j.mu.Lock()
	defer j.mu.Unlock()
	out := make([]Info, 0, len(j.watchers))
	for _, w := range j.watchers {
		for _, ref := range w.refIDs() {
			in := w.info(j.seq)
			in.Ref = ref
			out = append(out, in)
		}
	}
	for i := 1; i < len(out); i++ { // few: insertion sort by creation, then reference
		for k := i; k > 0 && (out[k].Created.Before(out[k-1].Created) ||
			out[k].Created.Equal(out[k-1].Created) && refLess(out[k].Ref, out[k-1].Ref)); k-- {
			out[k], out[k-1] = out[k-1], out[k]
		}
	}
	return out
}

// Config is what the watcher watches.
func (w *Watcher) Config() Config { return w.cfg }

// Matches reports whether an event falls in the watcher's view.
func (w *Watcher) Matches(e Event) bool {
	return w.matchPath(e.Path) || (e.OldPath != "" && w.matchPath(e.OldPath))
}

func (w *Watcher) matchPath(p string) bool {
	if !within(p, w.cfg.Path) {
		return false
	}
	rel := Rel(p, w.cfg.Path)
	if !w.cfg.Recursive && strings.Contains(rel, "/") {
		return false
	}
	return !pathmatch.InAnyComponent(rel, w.exclude) && (len(w.cfg.Include) == 0 || pathmatch.BaseOrPathLoose(rel, w.cfg.Include))
}

// offer takes an event from the journal (under the journal's lock).
func (w *Watcher) offer(e Event) {
	e, ok := Reportable(e) // names.go
	if !ok || !w.Matches(e) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	now := time.Now()
	p := &pending{e: e, deadline: now}
	if e.Type == Write && w.cfg.Debounce > 0 {
		// The first write of a path is told at once and opens a window;
		// writes inside it are held to its end and coalesce into one, which
		// opens the next window when told. A lone write waits for nothing,
		// and a stream of them is told once a window.
		if prev := w.latest[e.Path]; prev != nil && prev.e.Type == Write && !prev.dead {
			prev.dead = true
			p.deadline = prev.deadline // not told yet: this one takes its place
		} else if end, ok := w.quiet[e.Path]; ok && now.Before(end) {
			p.deadline = end
		}
	}
	if e.Type == Remove || e.Type == Rename {
		delete(w.quiet, e.Path) // a new file: a new window
		delete(w.quiet, e.OldPath)
	}
	w.queue = append(w.queue, p)
	w.latest[e.Path] = p
	if e.OldPath != "" {
		w.latest[e.OldPath] = p
	}
	w.flush(now)
}

// flush moves events whose debounce passed into the buffer, in order, and
// arms the timer for the next one.
func (w *Watcher) flush(now time.Time) {
	moved := false
	for len(w.queue) > 0 {
		p := w.queue[0]
		if !p.dead && p.deadline.After(now) {
			break
		}
		w.queue[0] = nil
		w.queue = w.queue[1:]
		if w.latest[p.e.Path] == p {
			delete(w.latest, p.e.Path)
		}
		if p.e.OldPath != "" && w.latest[p.e.OldPath] == p {
			delete(w.latest, p.e.OldPath)
		}
		if p.dead {
			continue
		}
		if p.e.Type == Write && w.cfg.Debounce > 0 {
			w.quietUntil(p.e.Path, now.Add(w.cfg.Debounce), now)
		}
		w.push(p.e)
		moved = true
	}
	if len(w.queue) == 0 {
		w.queue = nil
	} else {
		d := w.queue[0].deadline.Sub(now)
		if w.timer == nil {
			w.timer = time.AfterFunc(d, w.tick)
		} else {
			w.timer.Reset(d)
		}
	}
	if moved {
		w.wake()
	}
}

// quietUntil opens the window of path until end, forgetting windows that
// ended before now once there are many, so the map stays as small as the
// set of paths written in the last window.
func (w *Watcher) quietUntil(path string, end, now time.Time) {
	if len(w.quiet) >= 1024 {
		for p, e := range w.quiet {
			if !now.Before(e) {
				delete(w.quiet, p)
			}
		}
	}
	w.quiet[path] = end
}

// push keeps e, dropping the oldest event once the buffer is full.
func (w *Watcher) push(e Event) {
	if len(w.buf) < BufferSize {
		w.buf = append(w.buf, e)
		return
	}
	w.lostThrough = max(w.lostThrough, w.buf[w.head].Seq)
	if w.dropped != nil {
		w.dropped.Add(1)
	}
	w.buf[w.head] = e
	w.head = (w.head + 1) % BufferSize
}

// at is the i-th oldest buffered event.
func (w *Watcher) at(i int) Event { return w.buf[(w.head+i)%len(w.buf)] }

func (w *Watcher) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed {
		w.flush(time.Now())
	}
}

func (w *Watcher) wake() {
	close(w.changed)
	w.changed = make(chan struct{})
}

func (w *Watcher) markLost(seq uint64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if seq > w.lostThrough {
		w.lostThrough = seq
	}
	w.wake()
}

func (w *Watcher) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.closed = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.queue, w.latest, w.quiet = nil, nil, nil
	w.wake()
}

// Batch is the answer to a poll.
type Batch struct {
	Events   []Event
	Cursor   uint64 // pass it to the next poll
	Overflow bool   // events after the given cursor were lost
}

// Read returns, without waiting, up to limit buffered events after cursor.
//
// A cursor from before the watcher began (one taken before a restart, of
// the same watcher kept by the store) is answered from the journal's
// store first: the events the watcher would have heard, without debounce,
// and overflow when some were no longer kept.
func (w *Watcher) Read(cursor uint64, limit int) (Batch, <-chan struct{}, error) {
	if cursor > 0 && cursor < w.start && w.j != nil && w.j.store != nil {
		b, ok, err := w.history(cursor, limit)
		if err != nil || ok {
			w.mu.Lock()
			defer w.mu.Unlock()
			return b, w.changed, err
		}
		cursor = w.start
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return Batch{Cursor: cursor}, nil, ErrWatcherClosed
	}
	b := Batch{Cursor: cursor, Overflow: cursor < w.lostThrough}
	// buf is in seq order: find the first event after cursor.
	lo, hi := 0, len(w.buf)
	for lo < hi {
		m := (lo + hi) / 2
		if w.at(m).Seq <= cursor {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for i := lo; i < len(w.buf) && (limit <= 0 || len(b.Events) < limit); i++ {
		b.Events = append(b.Events, w.at(i))
	}
	if n := len(b.Events); n > 0 {
		b.Cursor = b.Events[n-1].Seq
	} else if b.Overflow {
		b.Cursor = w.lostThrough
	}
	return b, w.changed, nil
}

// history reads the events after cursor up to the watcher's start from
// the journal; ok is false when none passed its filter and none was lost.
func (w *Watcher) history(cursor uint64, limit int) (b Batch, ok bool, err error) {
	if limit <= 0 {
		limit = BufferSize
	}
	b.Cursor = cursor
	lost, err := w.j.Scan(context.Background(), cursor, func(e Event) bool {
		if e.Seq > w.start {
			return false
		}
		b.Cursor = e.Seq
		if e, ok := Reportable(e); ok && w.Matches(e) {
			b.Events = append(b.Events, e)
		}
		return len(b.Events) < limit
	})
	if len(b.Events) == 0 {
		b.Cursor = w.start
	}
	b.Overflow = lost
	return b, len(b.Events) > 0 || lost, err
}

// Poll is Read that waits up to timeout for something to read: an event
// after cursor, or a loss. It returns early when ctx ends.
func (w *Watcher) Poll(ctx context.Context, cursor uint64, limit int, timeout time.Duration) (Batch, error) {
	t := time.NewTimer(timeout)
	defer t.Stop()
	for {
		b, changed, err := w.Read(cursor, limit)
		if err != nil || len(b.Events) > 0 || b.Overflow {
			return b, err
		}
		select {
		case <-changed:
		case <-t.C:
			return b, nil
		case <-ctx.Done():
			return b, ctx.Err()
		}
	}
}
