package daemon

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/fusefs"
	"sandfs/internal/statedir"
	"sandfs/natsout"
	"sandfs/natsout/placement"
	"sandfs/natsout/replicate"
	"sandfs/rest"
)

// Config is what every sandbox of the host is opened and served with.
type Config struct {
	Registry *rest.Registry // where each sandbox is served (required)
	// Options are core.Open's for every sandbox; StateDir and Quota are
	// set per sandbox.
	Options core.Options
	// State is the daemon's state directory: each sandbox's token and
	// quota.json are kept in STATE/sandboxes/NAME ("" = none: no tokens,
	// no kept quotas).
	State   string
	History bool // the durable journal, in the sandbox's state directory
	Tokens  bool // each sandbox has its own token (false: --no-auth)

	CheckpointEvery time.Duration // StartCheckpointSchedule's (0: off)
	CheckpointKeep  int
	Events          *natsout.Publisher    // nil: not published (--events)
	Replicator      *replicate.Replicator // nil: checkpoints not replicated (--replicate)
	Placement       *placement.Leases     // nil: no fleet placement (--placement; placement.go)
	LogEvents       bool                  // log every journal event
	MountAll        string                // mount each sandbox at MountAll/NAME ("" = none)
	ForkCopy        bool                  // make every fork a copy, never an overlay (fork_copy.go)
	Claim           Claim                 // the placement's claim before a sandbox is taken up (adopt.go); nil: none
	Mount           fusefs.Options        // the mirrors' options
	Log             *slog.Logger
}

// Host owns the lifecycle of every sandbox of the daemon.
type Host struct {
	cfg Config
	ctx context.Context // the daemon's: every sandbox's watch ends with it
	log *slog.Logger

	mu sync.Mutex
	m  map[string]*entry
	// The placement's (placement.go): starts waiting for the broker, by
	// name; whether their loop runs; the Dir's own stop of a lost lease.
	waiting  map[string]func() error
	retrying bool
	dirLost  func(name string, again bool) bool
}

// entry is one sandbox served, and what was started for it.
type entry struct {
	sb      *core.Sandbox
	fixed   bool               // --root or --sandbox: never removed at run time
	state   string             // the key of its state directory (rootkey.go)
	token   string             // its own token ("" = none)
	wctx    context.Context    // its kernel watch's, which serve's is beneath
	cancel  context.CancelFunc // ends its kernel watch and what unserve ends
	unserve context.CancelFunc // ends its checkpoint schedule, not its watch (hold.go)
	// served is the context of its being served, which unserve ends; bg
	// the work started on it beyond any request's (goServed), which take
	// ends and waits for.
	served  context.Context
	bg      sync.WaitGroup
	stopLog func() // LogEvents; nil = none
	events  bool   // published (Config.Events)
	repl    bool   // its checkpoints replicated (Config.Replicator)
	// restart starts it again after its lease expired with the broker
	// away (placement.go); nil for a sandbox of DIR, which the Dir starts.
	restart func() error

	mu      sync.Mutex
	mirrors []mirror
}

// New makes a host serving nothing yet. ctx is the daemon's: the
// sandboxes' watches and schedules end with it.
func New(ctx context.Context, cfg Config) *Host {
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Host{cfg: cfg, ctx: ctx, log: cfg.Log, m: map[string]*entry{}, waiting: map[string]func() error{}}
}

// Opener opens a sandbox's root with the options the host chose.
type Opener func(core.Options) (*core.Sandbox, error)

// OpenPath opens the directory dir by its path (a fixed sandbox).
func OpenPath(name, dir string) Opener {
	return func(o core.Options) (*core.Sandbox, error) { return core.Open(name, dir, o) }
}

// Start opens the sandbox name and serves it: its kernel watch, checkpoint
// schedule, publisher and event log, its token, the registry, and its
// mount under MountAll. def is its quota when none is kept. A name served
// already is an error.
func (h *Host) Start(name string, open Opener, fixed bool, def core.Quota) (*core.Sandbox, error) {
	return h.start(name, name, open, fixed, def, false)
}

// start is Start with the state directory's key (rootkey.go). again: the
// host itself starts it again when its lease waits for the broker
// (placement.go); a sandbox of DIR is the Dir's to start again.
func (h *Host) start(name, stateKey string, open Opener, fixed bool, def core.Quota, again bool) (_ *core.Sandbox, failed error) {
	h.mu.Lock()
	_, taken := h.m[name]
	h.mu.Unlock()
	if taken {
		return nil, fmt.Errorf("sandbox %s is served already", name)
	}
	var restart func() error
	if again {
		restart = func() error {
			_, err := h.start(name, stateKey, open, fixed, def, true)
			return err
		}
	}
	if err := h.acquire(name, restart); err != nil {
		return nil, err
	}
	defer func() {
		if failed != nil {
			h.release(name)
		}
	}()
	o := h.cfg.Options
	o.Quota = def
	token := ""
	if h.cfg.State != "" {
		tok, q, kept, path, err := h.stateOf(name, stateKey)
		if err != nil {
			return nil, err
		}
		token = tok
		if kept {
			o.Quota = q
		}
		if h.cfg.History {
			o.StateDir = path
		}
	}
	sb, err := open(o)
	if err != nil {
		return nil, fmt.Errorf("sandbox %s: %w", name, err)
	}
	e := &entry{sb: sb, fixed: fixed, token: token, state: stateKey, restart: restart}
	wctx, cancel := context.WithCancel(h.ctx)
	e.wctx, e.cancel = wctx, cancel
	if err := sb.StartWatching(wctx, h.log); err != nil {
		cancel()
		sb.Close()
		if errors.Is(err, unix.EMFILE) {
			// inotify_init1's EMFILE: the user's bound on instances (one
			// a sandbox), or the process's on descriptors (Go raises
			// that one to its hard bound at start, so rarely).
			return nil, fmt.Errorf("sandbox %s: kernel watch: the bound on inotify instances per user is likely reached "+
				"(fs.inotify.max_user_instances; serve --inotify-instances N raises it): %w", name, err)
		}
		return nil, fmt.Errorf("sandbox %s: kernel watch: %w", name, err)
	}
	go func() {
		select {
		case <-sb.SweepDone():
		case <-wctx.Done():
			return
		}
		if n := sb.Swept(); n > 0 {
			h.log.Info("removed leftover temp files of an earlier run", "sandbox", name, "count", n)
		}
	}()
	if err := h.serve(name, e, o.Quota); err != nil {
		return nil, err
	}
	return sb, nil
}

// serve has the entry e, its sandbox open and watched, served as name:
// its checkpoint schedule, publisher, replicator (told the quota q), event
// log, routes and --mount-all mirror. On failure e is closed.
func (h *Host) serve(name string, e *entry, q core.Quota) error {
	sb := e.sb
	ctx, unserve := context.WithCancel(e.wctx)
	e.served, e.unserve = ctx, unserve
	checkpoint.StartSchedule(ctx, sb, h.cfg.CheckpointEvery, h.cfg.CheckpointKeep)
	if h.cfg.Events != nil {
		if err := h.cfg.Events.Add(natsout.Source{Name: name, Journal: sb.Journal(), Meta: sb.History()}); err != nil {
			e.close(h)
			return err
		}
		e.events = true
	}
	if h.cfg.Replicator != nil && sb.StateDir() != "" {
		if err := h.cfg.Replicator.Add(name, sb); err != nil {
			e.close(h)
			return err
		}
		e.repl = true
		h.describe(name, e.token, q)
	}
	if h.cfg.LogEvents {
		e.stopLog = logEvents(name, sb, h.log)
	}
	h.mu.Lock()
	h.m[name] = e
	h.mu.Unlock()
	if err := h.cfg.Registry.Add(name, sb, e.token); err != nil {
		h.mu.Lock()
		delete(h.m, name)
		h.mu.Unlock()
		e.close(h)
		return err
	}
	if h.cfg.MountAll != "" {
		if _, err := h.mount(name, e, mountAllPoint(h.cfg.MountAll, name), true); err != nil {
			h.log.Warn("mount-all: the sandbox is served without its mount", "sandbox", name, "err", err)
		}
	}
	return nil
}

// describe has the replicator keep the sandbox's token and quota in the
// fleet, for a host that takes it up (adopt.go).
func (h *Host) describe(name, token string, q core.Quota) {
	h.cfg.Replicator.Describe(name, replicate.Info{Token: token, Quota: replicate.InfoQuota{Bytes: q.Bytes, Entries: q.Entries}})
}

// stateOf reads (making them at the first start) the sandbox's token and
// kept quota, in its state directory.
func (h *Host) stateOf(name, key string) (tok string, q core.Quota, kept bool, path string, err error) {
	fd, path, err := openSandboxState(h.cfg.State, key)
	if err != nil {
		return "", q, false, path, err
	}
	defer unix.Close(fd)
	if h.cfg.Tokens {
		t, created, err := statedir.EnsureToken(fd, statedir.TokenFile, path+"/"+statedir.TokenFile)
		if err != nil {
			return "", q, false, path, fmt.Errorf("sandbox %s: %w", name, err)
		}
		if created {
			h.log.Info("made the sandbox's token", "sandbox", name, "token_file", path+"/"+statedir.TokenFile)
		}
		tok = t
	}
	q, kept, err = readQuota(fd)
	if err != nil {
		return "", q, false, path, fmt.Errorf("sandbox %s: %w", name, err)
	}
	return tok, q, kept, path, nil
}

// Stop stops serving name, the reverse of Start: the registry (its streams
// end, its requests finish or ctx ends), its mirrors, its publisher and
// event log; purge, when set, then removes everything in its tree through
// the sandbox; last its watch ends and it is closed. An unknown name is
// false.
func (h *Host) Stop(ctx context.Context, name string, purge bool) (bool, error) {
	e := h.take(ctx, name)
	if e == nil {
		return false, nil
	}
	var err error
	if purge {
		err = emptyTree(ctx, e.sb)
		if e.events {
			// A deleted sandbox's last events (the removes of its tree)
			// reach the fleet before its publisher goes.
			if left := h.cfg.Events.Flush(name, deleteFlushWait); left > 0 {
				h.log.Warn("events: sandbox deleted with events the broker did not take in time", "sandbox", name, "unpublished", left)
			}
		}
	}
	e.close(h)
	h.release(name)
	return true, err
}

// unserve stops serving name as Stop does, but leaves its sandbox open
// and watched, for the caller to close (hold.go); nil when not served.
func (h *Host) unserve(ctx context.Context, name string) *entry {
	e := h.take(ctx, name)
	if e == nil {
		return nil
	}
	e.detach(h)
	h.release(name)
	return e
}

// resume serves the held entry e as name again (hold.go), as start
// serves a sandbox it opens: its lease taken, its token and quota read
// from its state (def when it keeps none). On failure e is closed.
func (h *Host) resume(name string, e *entry, def core.Quota) error {
	if err := h.acquire(name, nil); err != nil {
		e.close(h)
		return err
	}
	tok, q, kept, _, err := h.stateOf(name, e.state)
	if err != nil {
		e.close(h)
		h.release(name)
		return err
	}
	if !kept {
		q = def
	}
	e.token = tok
	e.sb.Quota().Set(q)
	if err := h.serve(name, e, q); err != nil {
		h.release(name)
		return err
	}
	return nil
}

// take ends the routes and mirrors of name, and answers its entry,
// served no more (nil: not served).
func (h *Host) take(ctx context.Context, name string) *entry {
	h.mu.Lock()
	e := h.m[name]
	delete(h.m, name)
	delete(h.waiting, name)
	h.mu.Unlock()
	if e == nil {
		return nil
	}
	h.cfg.Registry.Remove(ctx, name)
	e.unmount(h, name)
	e.unserve() // its background work ends before a purge or a hold
	e.bg.Wait()
	return e
}

// deleteFlushWait bounds how long a DELETE waits for the sandbox's last
// events to be published.
const deleteFlushWait = 5 * time.Second

// close ends what Start started but the registry and the mirrors.
func (e *entry) close(h *Host) {
	e.detach(h)
	e.cancel()
	e.sb.Close()
}

// detach ends what Start started beyond the sandbox and its watch: its
// publisher, replicator, event log and checkpoint schedule.
func (e *entry) detach(h *Host) {
	if e.events {
		h.cfg.Events.Remove(e.sb.Name())
	}
	if e.repl {
		h.cfg.Replicator.Remove(e.sb.Name())
	}
	if e.stopLog != nil {
		e.stopLog()
	}
	e.unserve()
	e.events, e.repl, e.stopLog = false, false, nil // a held entry is served again, or closed
}

// goServed runs fn in the background of the sandbox name, on a context
// that ends when it is served no more, which then waits for fn; false,
// and fn not run, when name is not served.
func (h *Host) goServed(name string, fn func(ctx context.Context)) bool {
	h.mu.Lock()
	e := h.m[name]
	if e == nil {
		h.mu.Unlock()
		return false
	}
	e.bg.Add(1) // before take can remove e, so detach waits for it
	h.mu.Unlock()
	go func() {
		defer e.bg.Done()
		fn(e.served)
	}()
	return true
}

// emptyTree removes every entry of sb's root, through the sandbox (no
// symlink followed). An outside writer adding entries as fast as they go
// is given up on after a while (the rmdir that follows then fails).
func emptyTree(ctx context.Context, sb *core.Sandbox) error {
	for pass := 0; pass < 64; pass++ {
		list, _, err := sb.List(ctx, "/", 1000)
		if err != nil {
			return err
		}
		if len(list) == 0 {
			return nil
		}
		for _, fi := range list {
			if err := sb.Remove(ctx, "/"+fi.Name, true); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	return errors.New("entries keep appearing in the tree")
}

// Get is the sandbox served as name, and whether it is a fixed one.
func (h *Host) Get(name string) (sb *core.Sandbox, fixed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.m[name]; e != nil {
		return e.sb, e.fixed
	}
	return nil, false
}

// Token is the sandbox's own token ("" = none or not served).
func (h *Host) Token(name string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if e := h.m[name]; e != nil {
		return e.token
	}
	return ""
}

// Close stops every sandbox (the daemon's shutdown, after the requests in
// flight finished).
func (h *Host) Close() {
	h.mu.Lock()
	names := make([]string, 0, len(h.m))
	for n := range h.m {
		names = append(names, n)
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, n := range names {
		h.Stop(ctx, n, false)
	}
}
