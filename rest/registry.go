package rest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/checkpoint"
)

// Registry is the live set of sandboxes a Server serves, by name. The
// daemon adds and removes sandboxes while the Server runs (--sandboxes DIR,
// POST and DELETE /v1/sandboxes); every request looks its sandbox up here
// once, at its start (selector.go), and holds it until it ends: Remove
// waits for those holds.
//
// Each sandbox may have its own token: it opens that sandbox's routes on
// every family, and no other's.
type Registry struct {
	mu    sync.RWMutex
	m     map[string]*regEntry
	bySum map[[sha256.Size]byte]string // a sandbox token's SHA-256 sum → its sandbox (auth.go)
}

type regEntry struct {
	name     string
	sb       *core.Sandbox
	hasToken bool
	tokenSum [sha256.Size]byte
	gone     chan struct{} // closed by Remove: the sandbox's streams end
	values   sync.Map      // what the families keep beside the sandbox (host.SandboxValue)

	// The requests in flight on the sandbox (a stream counts until it
	// ends): acquire adds one, release takes it off; once removed, the
	// last release closes drained. Remove sets removed after taking the
	// entry out of the map, so no acquire follows it; whichever of Remove
	// and the last release comes second sees the other's store and closes
	// drained (once).
	inflight atomic.Int64
	removed  atomic.Bool
	drained  chan struct{}
	drain    sync.Once

	gate writeGate // a move's: writes refused 503 (gate.go)
}

func (e *regEntry) closeDrained() { e.drain.Do(func() { close(e.drained) }) }

// NewRegistry makes an empty registry.
func NewRegistry() *Registry {
	return &Registry{m: map[string]*regEntry{}, bySum: map[[sha256.Size]byte]string{}}
}

// Add serves sb under name, with its own token ("" = none). A name taken,
// or a token another sandbox has, is an error.
func (g *Registry) Add(name string, sb *core.Sandbox, token string) error {
	e := &regEntry{name: name, sb: sb, gone: make(chan struct{}), drained: make(chan struct{})}
	if token != "" {
		e.hasToken, e.tokenSum = true, sha256.Sum256([]byte(token))
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.m[name]; ok {
		return fmt.Errorf("sandbox %s is already served", name)
	}
	if e.hasToken {
		if other, ok := g.bySum[e.tokenSum]; ok {
			return fmt.Errorf("sandbox %s: its token is sandbox %s's", name, other)
		}
		g.bySum[e.tokenSum] = name
	}
	g.m[name] = e
	return nil
}

// Remove stops serving name: new requests get 404, and its watch streams
// end. It returns once they ended and the requests in flight on it
// finished (or ctx is done), with the sandbox (the caller closes it), or
// nil when name was not served.
func (g *Registry) Remove(ctx context.Context, name string) *core.Sandbox {
	g.mu.Lock()
	e := g.m[name]
	delete(g.m, name)
	if e != nil && e.hasToken {
		delete(g.bySum, e.tokenSum)
	}
	g.mu.Unlock()
	if e == nil {
		return nil
	}
	close(e.gone)
	e.removed.Store(true)
	if e.inflight.Load() == 0 {
		e.closeDrained()
	}
	select {
	case <-e.drained:
	case <-ctx.Done():
	}
	return e.sb
}

// acquire is the entry served as name, held for one request until its
// release; nil when name is not served. The hold is taken under the
// registry's lock, so a Remove that has taken name out sees every hold
// taken before.
func (g *Registry) acquire(name string) *regEntry {
	g.mu.RLock()
	defer g.mu.RUnlock()
	e := g.m[name]
	if e != nil {
		e.inflight.Add(1)
	}
	return e
}

// release ends a hold acquire took.
func (e *regEntry) release() {
	if e.inflight.Add(-1) == 0 && e.removed.Load() {
		e.closeDrained()
	}
}

// isGone reports whether Remove took the entry out.
func (e *regEntry) isGone() bool {
	select {
	case <-e.gone:
		return true
	default:
		return false
	}
}

// tokenSum is the SHA-256 sum of the token of the sandbox served as name;
// false when it is not served or has no token.
func (g *Registry) tokenSum(name string) ([sha256.Size]byte, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if e := g.m[name]; e != nil && e.hasToken {
		return e.tokenSum, true
	}
	return [sha256.Size]byte{}, false
}

// sandboxOfToken is the sandbox whose token has one of the sums, "" when
// none has (auth.go says why a map lookup leaks nothing about a token).
func (g *Registry) sandboxOfToken(sums [][sha256.Size]byte) string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for i := range sums {
		if name, ok := g.bySum[sums[i]]; ok {
			return name
		}
	}
	return ""
}

// Get is the sandbox served as name, or nil.
func (g *Registry) Get(name string) *core.Sandbox {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if e := g.m[name]; e != nil {
		return e.sb
	}
	return nil
}

// Names lists the names served, "default" first, then in byte order.
func (g *Registry) Names() []string {
	es := g.entries()
	names := make([]string, len(es))
	for i, e := range es {
		names[i] = e.name
	}
	return names
}

// entries are the entries served, in the order of Names, taken under one
// lock.
func (g *Registry) entries() []*regEntry {
	g.mu.RLock()
	es := make([]*regEntry, 0, len(g.m))
	for _, e := range g.m {
		es = append(es, e)
	}
	g.mu.RUnlock()
	sort.Slice(es, func(i, j int) bool {
		if (es[i].name == core.DefaultSandbox) != (es[j].name == core.DefaultSandbox) {
			return es[i].name == core.DefaultSandbox
		}
		return es[i].name < es[j].name
	})
	return es
}

// each calls fn for every sandbox served, in the order of Names (one that
// Remove takes out meanwhile may still be told, as it could be between a
// Get and its use).
func (g *Registry) each(fn func(name string, sb *core.Sandbox)) {
	for _, e := range g.entries() {
		fn(e.name, e.sb)
	}
}

// Manager makes and removes sandboxes at run time, for POST, PATCH and
// DELETE /v1/sandboxes (the daemon's --sandboxes DIR). A nil Manager:
// those routes answer that the daemon makes no sandboxes.
type Manager interface {
	// Create makes the sandbox name (a directory in DIR), serves it and
	// answers its token. An existing name is an error satisfying
	// errors.Is(err, fs.ErrExist).
	Create(ctx context.Context, name string, q core.Quota) (token string, err error)
	// Remove unmounts the sandbox's mirror, ends its watchers, stops
	// serving it and removes its directory. An unknown name satisfies
	// errors.Is(err, fs.ErrNotExist); a sandbox not made in DIR (the
	// "default", a --sandbox) is an error satisfying errors.Is(err,
	// fs.ErrPermission).
	Remove(ctx context.Context, name string) error
	// SetQuota sets and keeps the sandbox's quota.
	SetQuota(ctx context.Context, name string, q core.Quota) error
	// Fork makes the sandbox name from sandbox from at its checkpoint cp
	// ("" takes one now) and serves it. An existing name satisfies
	// errors.Is(err, fs.ErrExist), an unknown from or checkpoint
	// fs.ErrNotExist, a daemon that cannot fork errors.ErrUnsupported.
	Fork(ctx context.Context, name, from, cp string, q core.Quota) (ForkMade, error)
	// Merge merges the fork name into the sandbox it was made from (into,
	// when not "", must name it) and answers that sandbox's name. A name
	// that is no fork, or an into that is not its parent, satisfies
	// errors.Is(err, fs.ErrInvalid); conflicts under the strategy "fail"
	// checkpoint.ErrConflicts, with the result naming them.
	Merge(ctx context.Context, name, into string, o checkpoint.MergeOptions) (string, checkpoint.MergeResult, error)
	// ForkOf is what the sandbox name was forked from: the parent's name
	// and the parent's checkpoint; false when it is not a fork.
	ForkOf(name string) (from, checkpoint string, ok bool)
}

// ErrNoSandboxDir is a Manager's Create where the daemon makes no plain
// sandboxes (no --sandboxes DIR; it may still make forks): 405, as
// without a Manager.
var ErrNoSandboxDir = errors.New("the daemon makes no sandboxes: start it with --sandboxes DIR")

// ForkMade is what a fork answers.
type ForkMade struct {
	Token      string
	Checkpoint string // the parent's checkpoint the fork starts from
	Quota      core.Quota
	Copy       bool   // its tree is a copy of the checkpoint's, no overlay
	CopyWhy    string // why, when Copy
}

// Adopter takes a sandbox up on this host from the fleet's checkpoints
// (POST /v1/sandboxes {name, adopt: true}); a Manager that is one can.
type Adopter interface {
	// Adopt makes the sandbox name from the fleet's checkpoint cp of it
	// ("": the newest) and serves it. A name served or of DIR satisfies
	// errors.Is(err, fs.ErrExist); no such checkpoint in the fleet
	// fs.ErrNotExist; a daemon not in a fleet errors.ErrUnsupported.
	Adopt(ctx context.Context, name, cp string) (api.SandboxAdopted, error)
}
