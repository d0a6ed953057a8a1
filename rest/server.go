package rest

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"sandfs/core"
	"sandfs/rest/agentfs"
	"sandfs/rest/aio"
	"sandfs/rest/httpkit"
	"sandfs/rest/mcp"
	"sandfs/rest/named"
	"sandfs/rest/sandboxd"
)

// Config wires a Server. cmd/sandfs builds it from flags.
type Config struct {
	// Sandboxes are served from the start, with no token of their own.
	// Without a Registry, "default" is required.
	Sandboxes map[string]*core.Sandbox
	// Registry, when set, is the live set of sandboxes (registry.go);
	// Sandboxes are then added to it, and "default" may be absent (the
	// routes that select it answer 404). Manager makes and removes them for
	// POST, PATCH and DELETE /v1/sandboxes (nil: none made at run time).
	Registry *Registry
	Manager  Manager
	// Placement, when set, is the fleet's: a sandbox another host holds is
	// 307 there, one moving 503 (placement.go).
	Placement Placement
	Token     string // "" = no auth: the daemon's token, which may do everything
	Limits    Limits
	Log       *slog.Logger // nil = slog.Default()

	// Browser guard (browser.go): the pages and Host names allowed beside
	// the daemon's own (--allow-origin, --allow-host).
	AllowOrigins []string // "scheme://host[:port]"
	AllowHosts   []string // host names or IP addresses, no port

	// MirrorOps reports, at each scrape of /metrics, how many requests of
	// each kind the FUSE mirror of a sandbox served (nil, or a nil map: no
	// mirror). rest does not know the mirror; the daemon wires it.
	MirrorOps func(sandbox string) map[string]uint64
	// MirrorURing reports how many requests a sandbox's mirrors served
	// over io_uring, and whether any was asked to (serve --fuse-uring;
	// nil, or false: none).
	MirrorURing func(sandbox string) (uint64, bool)
	// Unmounted names, for /health, the mountpoints of a sandbox's mirrors
	// that were unmounted behind the daemon's back (nil: none).
	Unmounted func(sandbox string) []string

	// Events reports, at each scrape, a sandbox's publishing to NATS
	// JetStream (--events; nil, or false: not published).
	Events func(sandbox string) (EventsStats, bool)
	// Replication reports, at each scrape, a sandbox's replication of its
	// checkpoints to NATS JetStream (--replicate; nil, or false: off).
	Replication func(sandbox string) (ReplicationStats, bool)
}

// ReplicationStats is one sandbox's replication of its checkpoints.
type ReplicationStats struct {
	Behind      uint64 // checkpoints made and not yet in the fleet
	BytesBehind uint64 // the content those checkpoints added to the local store
	Objects     uint64 // objects sent since start
	ObjectBytes uint64 // their bytes
	Manifests   uint64 // manifests sent since start
	Unqueued    uint64 // checkpoints the full queue did not hold (caught up from the store)
	Failed      uint64 // sends that failed (tried again)
}

// EventsStats is one sandbox's publishing to the fleet's stream.
type EventsStats struct {
	Backlog   uint64 // journal seq minus the published cursor
	Published uint64 // messages acked since start
	Failed    uint64 // publish attempts that failed since start
	Lost      uint64 // events retention dropped before they were published
	Duplicate uint64 // messages the stream acked as duplicates of ones it had (not stored again)
}

// DefaultLimits are the limits of api.md §1.
var DefaultLimits = Limits{MaxJSONBody: 64 << 20, MaxTarBody: 4 << 30}

// Server serves the route families over the sandboxes of a Registry.
type Server struct {
	reg       *Registry // every request looks its sandbox up here (selector.go)
	manager   Manager   // nil: no sandbox made at run time
	placement Placement // nil: no fleet placement (placement.go)
	auth      tokenCheck
	browser   browserGuard      // browser.go: Host and Origin
	families  map[string]string // static route path → family, for requests no route handled
	limits    Limits
	log       *slog.Logger
	routes    []httpkit.Line
	shapes    map[string]httpkit.Shape // family name → its error shape, from the table
	handler   http.Handler
	streams   streamStop       // streams.go: ended by EndStreams before shutdown
	agent     *agentfs.Family  // the sandbox-agent family (rest/agentfs)
	aio       *aio.Family      // the AIO family (rest/aio)
	named     *named.Family    // the named-sandbox family (rest/named)
	sandboxd  *sandboxd.Family // the KEP-539.2 family (rest/sandboxd)
	started   time.Time        // GET /v1/health's uptime_seconds
	mcp       *mcp.Family      // MCP over streamable HTTP (rest/mcp)

	stats          []*routeStats // metrics.go: one per route, in table order
	metricsHandler http.Handler
	mirrorOps      func(sandbox string) map[string]uint64
	mirrorURing    func(sandbox string) (uint64, bool)
	unmounted      func(sandbox string) []string
	events         func(sandbox string) (EventsStats, bool)
	replication    func(sandbox string) (ReplicationStats, bool)
}

// New builds a Server from cfg. Without cfg.Registry it fails when sandbox
// "default" is missing.
func New(cfg Config) (*Server, error) {
	reg := cfg.Registry
	if reg == nil {
		if cfg.Sandboxes[core.DefaultSandbox] == nil {
			return nil, errors.New("rest: Config.Sandboxes has no \"default\" sandbox")
		}
		reg = NewRegistry()
	}
	for name, sb := range cfg.Sandboxes {
		if err := reg.Add(name, sb, ""); err != nil {
			return nil, fmt.Errorf("rest: %w", err)
		}
	}
	s := &Server{
		reg:         reg,
		manager:     cfg.Manager,
		placement:   cfg.Placement,
		auth:        newTokenCheck(cfg.Token),
		limits:      cfg.Limits,
		mirrorOps:   cfg.MirrorOps,
		mirrorURing: cfg.MirrorURing,
		unmounted:   cfg.Unmounted,
		events:      cfg.Events,
		replication: cfg.Replication,
		log:         cfg.Log,
		streams:     streamStop{ch: make(chan struct{})},
		started:     time.Now(),
	}
	if s.limits.MaxJSONBody <= 0 {
		s.limits.MaxJSONBody = DefaultLimits.MaxJSONBody
	}
	if s.limits.MaxTarBody <= 0 {
		s.limits.MaxTarBody = DefaultLimits.MaxTarBody
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	var err error
	if s.browser, err = newBrowserGuard(cfg.AllowOrigins, cfg.AllowHosts); err != nil {
		return nil, fmt.Errorf("rest: %w", err)
	}
	s.agent = agentfs.New(host{s})
	s.aio = aio.New(host{s})
	s.named = named.New(host{s})
	s.sandboxd = sandboxd.New(host{s})
	s.mcp = mcp.New(host{s}, s.log)
	s.routes = s.table()
	s.families = map[string]string{}
	s.shapes = map[string]httpkit.Shape{}
	for _, rt := range s.routes {
		if _, ok := s.shapes[rt.Family]; !ok {
			s.shapes[rt.Family] = httpkit.Shape{Name: rt.Family, Render: rt.Render}
		}
		if !strings.ContainsAny(rt.Path, ":*") {
			s.families[rt.Path] = rt.Family
		}
	}

	r := httprouter.New()
	exact := map[string]httprouter.Handle{}
	for _, rt := range s.routes {
		if shadowsParam(rt, s.routes) {
			exact[rt.Method+" "+rt.Path] = s.handle(rt)
			continue
		}
		r.Handle(rt.Method, rt.Path, s.handle(rt))
	}
	s.metricsHandler = s.newMetricsHandler() // after handle made every route's stats
	r.NotFound = http.HandlerFunc(s.notFound)
	r.MethodNotAllowed = http.HandlerFunc(s.methodNotAllowed)
	r.PanicHandler = s.lastResortPanic
	r.GlobalOPTIONS = http.HandlerFunc(s.preflight) // browser.go: guarded, CORS for allowed origins
	s.handler = r
	if len(exact) > 0 {
		s.handler = http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
			if h := exact[req.Method+" "+req.URL.Path]; h != nil {
				h(w, req, nil)
				return
			}
			r.ServeHTTP(w, req)
		})
	}
	return s, nil
}

// shadowsParam reports whether rt is a static route beside a parameter of
// another route of its method (POST /v1/file/watch/wait beside POST
// /v1/file/watch/:id/poll), which httprouter cannot hold in one tree: such
// routes are matched exactly in front of the router, and win over the
// parameter.
func shadowsParam(rt httpkit.Line, all []httpkit.Line) bool {
	if strings.ContainsAny(rt.Path, ":*") {
		return false
	}
	segs := strings.Split(rt.Path, "/")
	for _, o := range all {
		if o.Method != rt.Method || o.Path == rt.Path {
			continue
		}
		os := strings.Split(o.Path, "/")
		for i := 0; i < len(segs) && i < len(os); i++ {
			if os[i] == segs[i] {
				continue
			}
			if strings.HasPrefix(os[i], ":") || strings.HasPrefix(os[i], "*") {
				return true
			}
			break
		}
	}
	return false
}

// Handler is the http.Handler serving every route of the table.
func (s *Server) Handler() http.Handler { return s.handler }

// Routes returns the route table (method, path pattern, family, whether auth
// applies) for tests and docs.
func (s *Server) Routes() []Route {
	out := make([]Route, len(s.routes))
	for i, rt := range s.routes {
		out[i] = rt.Route
	}
	return out
}
