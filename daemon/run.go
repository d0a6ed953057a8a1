package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"strings"
	"time"

	"sandfs/core"
	"sandfs/fusefs"
	"sandfs/natsout"
	"sandfs/natsout/placement"
	"sandfs/natsout/replicate"
	"sandfs/rest"
)

// RunConfig is what the daemon runs with, every flag already checked and
// every path resolved by its caller (cmd/sandfs serve).
type RunConfig struct {
	// Host is the Host's configuration; Run sets its Registry and Events.
	Host Config
	// Fixed are the sandboxes of --root and --sandbox, each root made when
	// missing; a quota kept in the sandbox's quota.json wins over Quota.
	Fixed []Fixed
	// SandboxesDir serves its subdirectories as the live registry
	// (--sandboxes; "" = none), with DefaultQuota for one that keeps none.
	SandboxesDir string
	DefaultQuota core.Quota
	// Mounts are the FUSE mirrors: MNT (the sandbox "default") or NAME=MNT;
	// Mount their options and those of --mount-all's.
	Mounts []string
	Mount  MountConfig
	// EventsURL publishes every journal to NATS JetStream under EventsHost
	// ("" = off).
	EventsURL, EventsHost string
	// ReplicateURL replicates every checkpoint to NATS JetStream, its
	// manifests naming EventsHost as their sender ("" = off).
	ReplicateURL string
	// PlacementURL serves a sandbox only while this host holds its lease
	// in the fleet's bucket there (placement.go; "" = off), renewed within
	// LeaseTTL; Advertise is the URL the lease gives clients of another
	// host (a 307's Location).
	PlacementURL string
	Advertise    string
	LeaseTTL     time.Duration
	// Listen is HOST:PORT or unix:PATH; Token the daemon's ("" = none).
	Listen string
	Token  string
	// DebugListen serves Go's profiles on a loopback address ("" = none).
	DebugListen string
	REST        RESTConfig
	HTTP        HTTPConfig
	// CheckListener may refuse the address listened on (where, as the log
	// tells it; local: only this machine reaches it) before anything is
	// served.
	CheckListener func(where string, local bool) error
	// Serving is told the address once the daemon answers.
	Serving func(net.Addr)
}

// Fixed is one sandbox of --root or --sandbox.
type Fixed struct {
	Name, Dir string
	Quota     core.Quota
}

// MountConfig is the FUSE mirrors' (fusefs.Options).
type MountConfig struct {
	Debug, NoPassthrough, DirectMount bool
	// Uring serves the mounts over FUSE over io_uring where the kernel
	// offers it (fusefs.Options.Uring).
	Uring bool
	// Cache is how long the kernel may keep names, attributes and pages
	// where the journal hears outside changes (0: ask at every call).
	Cache time.Duration
}

// RESTConfig is the HTTP face's: its limits and its browser guard.
type RESTConfig struct {
	MaxJSONBody, MaxTarBody  int64
	AllowOrigins, AllowHosts []string
}

// CheckAllowed refuses a malformed --allow-origin or --allow-host.
func CheckAllowed(origins, hosts []string) error { return rest.CheckAllowed(origins, hosts) }

// Version is the daemon's build, as `sandfs version` prints it.
func Version() string { return rest.Version() }

// HTTPConfig is the http.Server's: slow clients' bounds and the shutdown's.
type HTTPConfig struct {
	HeaderTimeout, IdleTimeout time.Duration
	MaxHeaderBytes             int
	// ShutdownTimeout bounds the wait for the requests in flight at a stop.
	ShutdownTimeout time.Duration
}

// streamsEndTimeout bounds the wait for the watch streams' last messages
// at shutdown (a websocket peer that does not answer the close frame).
const streamsEndTimeout = 500 * time.Millisecond

// Run serves until ctx is done, then stops in order: the watch streams
// end (each told the daemon is stopping), the mirrors are unmounted, the
// requests in flight finish (up to HTTP.ShutdownTimeout, then their
// connections are closed), and every sandbox is closed.
func Run(ctx context.Context, rc RunConfig) error {
	log := rc.Host.Log
	events, err := startEvents(ctx, rc)
	if err != nil {
		return err
	}
	if events != nil {
		defer events.Close()
	}
	repl, err := startReplicate(ctx, rc)
	if err != nil {
		return err
	}
	if repl != nil {
		defer repl.Close()
	}
	var h *Host
	leases, err := startPlacement(ctx, rc, func(name string, why placement.Loss) { h.leaseLost(name, why) })
	if err != nil {
		return err
	}
	if leases != nil {
		defer leases.Close() // after h.Close: what is still held is released
	}
	reg := rest.NewRegistry()
	rc.Host.Registry, rc.Host.Events, rc.Host.Replicator, rc.Host.Placement = reg, events, repl, leases
	if leases != nil && rc.Host.Claim == nil {
		rc.Host.Claim = heldElsewhere(leases)
	}
	m := rc.Mount
	rc.Host.Mount = fusefs.Options{Log: log, Debug: m.Debug, NoPassthrough: m.NoPassthrough, DirectMount: m.DirectMount, Uring: m.Uring,
		EntryTimeout: m.Cache, AttrTimeout: m.Cache, NegativeTimeout: m.Cache}
	h = New(ctx, rc.Host)
	defer h.Close()
	fixed, err := startFixed(h, rc.Fixed)
	if err != nil {
		return err
	}
	var manager rest.Manager
	if rc.SandboxesDir != "" {
		dir, err := OpenDir(h, rc.SandboxesDir, rc.DefaultQuota)
		if err != nil {
			return err
		}
		defer dir.Close() // before h.Close: nothing starts while they stop
		dir.Rescan()
		h.StartForks() // after DIR's: a name of DIR is DIR's
		go dir.Run(ctx)
		if leases != nil {
			if err := dir.takeMovesIn(leases); err != nil { // movein.go
				return err
			}
		}
		manager = dir
		log.Info("serving the sandboxes of "+dir.Path(), "sandboxes", dir.Path())
	} else if rc.Host.State != "" && rc.Host.History {
		// Forks live in the state: they need no DIR.
		h.StartForks()
		manager = &forksOnly{h: h, def: rc.DefaultQuota}
	}
	if rc.DebugListen != "" {
		if err := startDebug(ctx, rc.DebugListen, rc.Token, log); err != nil {
			return err
		}
	}
	srvREST, err := rest.New(rest.Config{
		MirrorOps:   h.MirrorOps,
		MirrorURing: h.MirrorURing,
		Unmounted:   h.Unmounted,
		Events:      eventsStats(events),
		Replication: replicationStats(repl),
		Registry:    reg,
		Manager:     manager,
		Placement:   restPlacement(leases),
		Token:       rc.Token,
		Limits:      rest.Limits{MaxJSONBody: rc.REST.MaxJSONBody, MaxTarBody: rc.REST.MaxTarBody},
		Log:         log,

		AllowOrigins: rc.REST.AllowOrigins,
		AllowHosts:   rc.REST.AllowHosts,
	})
	if err != nil {
		return err
	}

	// The mirrors are up before the daemon answers /health.
	defer h.UnmountAll()
	for _, spec := range rc.Mounts {
		if err := mountMirror(h, spec, rc.Fixed); err != nil {
			if leases != nil && errors.Is(err, errNotServed) {
				log.Warn("placement: --mount of a sandbox not served here (another host holds it, or the broker is away): not mounted", "mount", spec, "err", err)
				continue
			}
			return err
		}
	}

	l, where, cleanup, err := listen(rc.Listen)
	if err != nil {
		return err
	}
	defer cleanup()
	if rc.CheckListener != nil {
		if err := rc.CheckListener(where, isLocal(l)); err != nil {
			return err
		}
	}

	// Requests run under their own context, not ctx: a signal must let the
	// requests in flight finish, not cancel them.
	reqCtx, cancelRequests := context.WithCancel(context.Background())
	defer cancelRequests()
	srv := httpServer(srvREST.Handler(), rc.HTTP, log, reqCtx)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(srvREST.WrapListener(l)) }()
	for _, d := range rc.Fixed {
		sb := fixed[d.Name]
		if sb == nil {
			continue // not served: placement.go
		}
		log.Info(fmt.Sprintf("serving sandbox %s (%s) on %s", d.Name, d.Dir, where),
			"sandbox", d.Name, "root", d.Dir, "listen", where, "workdir", sb.Workdir(), "openat2", sb.Root().Openat2())
	}
	if rc.Serving != nil {
		rc.Serving(l.Addr())
	}

	select {
	case err := <-served:
		return fmt.Errorf("serving on %s: %w", where, err)
	case <-ctx.Done():
	}
	// The watch streams first: each sends its last message and ends, so
	// that a connected watcher or console does not hold the stop.
	ectx, cancelEnd := context.WithTimeout(context.Background(), streamsEndTimeout)
	srvREST.EndStreams(ectx)
	cancelEnd()
	h.UnmountAll()
	log.Info("shutting down: finishing the requests in flight", "timeout", rc.HTTP.ShutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), rc.HTTP.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("requests still running at the shutdown timeout; closing their connections", "err", err)
		srv.Close()
	}
	cancelRequests()
	<-served
	log.Info("stopped")
	return nil
}

// startEvents connects the fleet's publisher (nil: --events is off); each
// sandbox is added as it is served.
func startEvents(ctx context.Context, rc RunConfig) (*natsout.Publisher, error) {
	if rc.EventsURL == "" {
		return nil, nil
	}
	p, err := natsout.Start(ctx, natsout.Config{URL: rc.EventsURL, Host: rc.EventsHost, Log: rc.Host.Log}, nil)
	if err != nil {
		return nil, err
	}
	rc.Host.Log.Info("publishing events to "+rc.EventsURL, "host", rc.EventsHost, "stream", natsout.StreamName)
	return p, nil
}

// eventsStats is a sandbox's publishing, for rest.Config.Events (nil: off).
func eventsStats(p *natsout.Publisher) func(string) (rest.EventsStats, bool) {
	if p == nil {
		return nil
	}
	return func(name string) (rest.EventsStats, bool) {
		s, ok := p.Stats()[name]
		return rest.EventsStats(s), ok
	}
}

// startReplicate connects the checkpoints' replicator (nil: --replicate
// is off); each sandbox is added as it is served.
func startReplicate(ctx context.Context, rc RunConfig) (*replicate.Replicator, error) {
	if rc.ReplicateURL == "" {
		return nil, nil
	}
	r, err := replicate.Start(ctx, replicate.Config{URL: rc.ReplicateURL, Host: rc.EventsHost, Log: rc.Host.Log})
	if err != nil {
		return nil, err
	}
	rc.Host.Log.Info("replicating checkpoints to "+rc.ReplicateURL, "host", rc.EventsHost, "objects", replicate.SmallBucket+" and "+replicate.ObjectsBucket)
	return r, nil
}

// replicationStats is a sandbox's replication, for rest.Config.Replication
// (nil: off).
func replicationStats(r *replicate.Replicator) func(string) (rest.ReplicationStats, bool) {
	if r == nil {
		return nil
	}
	return func(name string) (rest.ReplicationStats, bool) {
		s, ok := r.Stats(name)
		return rest.ReplicationStats{Behind: s.Behind, BytesBehind: s.BytesBehind, Objects: s.Objects, ObjectBytes: s.ObjectBytes,
			Manifests: s.Manifests, Unqueued: s.Unqueued, Failed: s.Failed}, ok
	}
}

// startFixed serves the fixed sandboxes, each root made when missing.
func startFixed(h *Host, dirs []Fixed) (map[string]*core.Sandbox, error) {
	fixed := make(map[string]*core.Sandbox, len(dirs))
	for _, d := range dirs {
		created, err := prepareRoot(d.Dir)
		if err != nil {
			return nil, err
		}
		if created {
			h.log.Info("created sandbox root", "sandbox", d.Name, "root", d.Dir)
		}
		sb, err := h.StartFixed(d.Name, d.Dir, d.Quota)
		if errors.As(err, new(*rest.HeldError)) || errors.Is(err, placement.ErrBroker) {
			continue // another host serves it, or the broker is away: logged (placement.go)
		}
		if err != nil {
			return nil, err
		}
		fixed[d.Name] = sb
	}
	return fixed, nil
}

// prepareRoot makes sure dir is a directory, creating it (and its parents)
// when missing.
func prepareRoot(dir string) (created bool, err error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return false, fmt.Errorf("cannot create the sandbox root: %w", err)
		}
		return true, nil
	case err != nil:
		return false, fmt.Errorf("sandbox root: %w", err)
	case !fi.IsDir():
		return false, fmt.Errorf("sandbox root %s is not a directory", dir)
	}
	return false, nil
}

// mountMirror mounts the FUSE mirror one --mount (MNT or NAME=MNT) asks
// for (Mount: once the sandbox's kernel watch walked the tree); NAME is a
// sandbox served or a fixed one, else the whole spec is MNT.
func mountMirror(h *Host, spec string, fixed []Fixed) error {
	name, mnt := core.DefaultSandbox, spec
	if n, m, ok := strings.Cut(spec, "="); ok {
		sb, _ := h.Get(n)
		named := sb != nil
		for _, f := range fixed {
			named = named || f.Name == n // a fixed sandbox, served or not (placement.go)
		}
		if named {
			name, mnt = n, m
		}
	}
	_, err := h.Mount(name, mnt)
	return err
}

// ReaperVerb is the argument that makes the binary the mirrors' reaper,
// the process that unmounts them if the daemon dies (fusefs.RunReaper):
// main runs RunReaper before anything else when it is given.
const ReaperVerb = fusefs.ReaperVerb

// RunReaper runs the reaper and returns its exit code.
func RunReaper(args []string, stdin io.Reader) int { return fusefs.RunReaper(args, stdin) }
