package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"

	"github.com/julienschmidt/httprouter"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/core"
	"sandfs/core/journal"
	"sandfs/rest/httpkit"
)

// Family serves the MCP routes over the sandboxes of the server that hosts
// it: one server of the SDK with every tool, shared by all requests, each
// tool taking its sandbox from the request's context; and, for listen
// streams, a small server per sandbox that holds its subscriptions (a
// resource URI names a file only within its sandbox, and the SDK tells a
// URI's subscribers by server).
type Family struct {
	host    httpkit.Host
	log     *slog.Logger
	limits  httpkit.Limits
	handler *sdk.StreamableHTTPHandler
	srv     *sdk.Server
}

// ServerName is the serverInfo.name initialize answers.
const ServerName = "sandfs"

var implementation = &sdk.Implementation{Name: ServerName, Title: "sandfs filesystem", Version: "1"}

// New is the family served by host, logging to log.
func New(host httpkit.Host, log *slog.Logger) *Family {
	f := &Family{host: host, log: log, limits: host.Limits()}
	f.srv = sdk.NewServer(implementation, &sdk.ServerOptions{
		// Offered here, taken on a listen server (serverFor): a
		// subscription reaching this one was not routed as a listen.
		SubscribeHandler: func(context.Context, *sdk.SubscribeRequest) error {
			return subscribeError("subscriptions are taken by %s alone", methodListen)
		},
		UnsubscribeHandler: func(context.Context, *sdk.UnsubscribeRequest) error { return nil },
	})
	f.addRefTools(f.srv)
	f.addSandfsTools(f.srv)
	f.addLogTool(f.srv)
	f.addResources(f.srv)
	guardLegacySubscribe(f.srv)
	f.handler = sdk.NewStreamableHTTPHandler(f.serverFor, &sdk.StreamableHTTPOptions{
		Stateless:    true, // nothing to keep between requests; the sandbox is the request's
		JSONResponse: true, // one answer per POST: no tool streams (a listen is an event stream)
		// The browser guard of rest (browser.go) already checked Host and
		// Origin, with the daemon's --allow-host list the SDK's own check
		// would not know.
		DisableLocalhostProtection: true,
		MaxRequestBodyBytes:        f.limits.MaxJSONBody,
		// A tool's work (a walk, a grep) stops when its client hangs up;
		// the SDK can tell only for the 2026-07-28 protocol.
		PropagateRequestCancellation: true,
	})
	return f
}

type listenKey struct{}

// serverFor is the server a request goes to: a listen's goes to its
// sandbox's listen server (made at the first, gone with the sandbox),
// every other to the shared one.
func (f *Family) serverFor(r *http.Request) *sdk.Server {
	if r.Context().Value(listenKey{}) == nil {
		return f.srv
	}
	if v := f.host.SandboxValue(r.Context(), listenKey{}, func() any { return f.newListenServer() }); v != nil {
		return v.(*sdk.Server)
	}
	return f.srv
}

// newListenServer is a server that takes subscriptions and tells them
// from the journal (subscribe.go); it has no tools, as a listen calls none.
func (f *Family) newListenServer() *sdk.Server {
	fd := &feed{}
	srv := sdk.NewServer(implementation, &sdk.ServerOptions{
		SubscribeHandler: func(ctx context.Context, req *sdk.SubscribeRequest) error {
			sb, err := f.sandbox(ctx)
			if err != nil {
				return err
			}
			return fd.subscribe(ctx, sb, req.Params.URI)
		},
		UnsubscribeHandler: func(_ context.Context, req *sdk.UnsubscribeRequest) error {
			fd.unsubscribe(req.Params.URI)
			return nil
		},
	})
	fd.srv = srv
	f.addResources(srv) // the resources capability a subscription needs
	return srv
}

// Routes are the family's lines of the route table.
func (f *Family) Routes() []httpkit.Line {
	m := httpkit.Shape{Name: httpkit.FamilyMCP, Render: Render}
	return []httpkit.Line{
		// MCP (docs/mcp.md): streamable HTTP, stateless; the token's sandbox (or the selector's).
		m.On("POST", "/mcp", httpkit.Authed, f.serve),                      // b: JSON-RPC message(s) → JSON-RPC answer
		m.On("GET", "/mcp", httpkit.Authed, f.serve),                       // → 405 (no server-initiated stream)
		m.On("DELETE", "/mcp", httpkit.Authed, f.serve),                    // → 405 (no session)
		m.On("POST", "/v1/sandboxes/:name/mcp", httpkit.Authed, f.serve),   // b: JSON-RPC message(s) → JSON-RPC answer
		m.On("GET", "/v1/sandboxes/:name/mcp", httpkit.Authed, f.serve),    // → 405
		m.On("DELETE", "/v1/sandboxes/:name/mcp", httpkit.Authed, f.serve), // → 405
		m.On("POST", "/v1/sprites/:name/mcp", httpkit.Authed, f.serve),     // as above
		m.On("GET", "/v1/sprites/:name/mcp", httpkit.Authed, f.serve),      // as above
		m.On("DELETE", "/v1/sprites/:name/mcp", httpkit.Authed, f.serve),   // as above
	}
}

// serve hands the request to the SDK. A body over the JSON limit is
// refused here, in the family's shape: when it is announced before it is
// read, else once the reading crosses the limit (readBody).
func (f *Family) serve(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if r.ContentLength > f.limits.MaxJSONBody {
		return httpkit.TooLarge("the body is %d bytes; at most %d", r.ContentLength, f.limits.MaxJSONBody)
	}
	body, err := readBody(r, f.limits.MaxJSONBody)
	if err != nil {
		return err
	}
	if isListen(body) {
		// A listen stream lasts until its client leaves, the daemon stops
		// or the sandbox goes, whichever comes first.
		ctx, done := f.host.StreamContext(r.Context())
		defer done()
		r = r.WithContext(context.WithValue(ctx, listenKey{}, true))
	}
	rw := &refusalWriter{ResponseWriter: w}
	f.handler.ServeHTTP(rw, r)
	return rw.refusal()
}

// isListen says whether the message (or a message of the batch) body
// holds is a subscriptions/listen request: it goes to its sandbox's listen
// server, which has no tools. The word alone is not enough: a tool's
// argument may hold it.
func isListen(body []byte) bool {
	if !bytes.Contains(body, []byte(methodListen)) {
		return false
	}
	type msg struct {
		Method string `json:"method"`
	}
	var one msg
	if json.Unmarshal(body, &one) == nil {
		return one.Method == methodListen
	}
	var batch []msg
	if json.Unmarshal(body, &batch) == nil {
		for _, m := range batch {
			if m.Method == methodListen {
				return true
			}
		}
	}
	return false
}

// rpcError is a JSON-RPC error answer with no id: a refusal made before
// the message was read.
type rpcError struct {
	JSONRPC string   `json:"jsonrpc"`
	ID      any      `json:"id"`
	Error   rpcInner `json:"error"`
}

type rpcInner struct {
	Code    int     `json:"code"`
	Message string  `json:"message"`
	Data    rpcData `json:"data"`
}

type rpcData struct {
	Kind   string `json:"kind"`
	Status int    `json:"status"`
	ETag   string `json:"etag,omitempty"`
}

// Render writes a refusal of the route wrapper (auth, the browser guard, a
// body over the limit) as a JSON-RPC error with the HTTP status: code
// -32001 for auth, -32600 (invalid request) for the rest, -32603 for an
// internal error.
func Render(w http.ResponseWriter, k httpkit.ErrKind) {
	code := -32600
	switch {
	case k.Status == http.StatusUnauthorized || k.Status == http.StatusForbidden:
		code = -32001
	case k.Status >= 500:
		code = -32603
	}
	httpkit.WriteError(w, k.Status, "application/json", rpcError{JSONRPC: "2.0", Error: rpcInner{Code: code, Message: k.Detail,
		Data: rpcData{Kind: string(k.Kind), Status: k.Status, ETag: k.ETag}}})
}

// sandbox is the sandbox of the request a tool call came in.
func (f *Family) sandbox(ctx context.Context) (*core.Sandbox, error) {
	sb := f.host.SandboxOf(ctx)
	if sb == nil {
		return nil, errNoSandbox
	}
	return sb, nil
}

// actorCtx stamps ctx with the client's name as the actor when the request
// named none in X-Sandfs-Actor (the route wrapper stamped that one).
func actorCtx(ctx context.Context, req *sdk.CallToolRequest) context.Context {
	if req.Extra != nil && req.Extra.Header.Get(httpkit.ActorHeader) != "" {
		return ctx
	}
	ci := req.ClientInfo()
	if ci == nil || ci.Name == "" || httpkit.CheckActor("clientInfo.name", ci.Name) != nil {
		return ctx
	}
	return core.WithActor(ctx, core.Actor{Origin: journal.API, Name: ci.Name})
}
