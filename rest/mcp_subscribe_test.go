package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/core/journal"
)

// notice is one notifications/resources/updated a client heard: the URI
// and the event in its _meta.
type notice struct {
	URI   string
	Event journal.Fields
}

// listener is a client session that keeps what it hears.
type listener struct {
	cs   *sdk.ClientSession
	c    chan notice
	acks chan struct{} // a listen stream's notifications/subscriptions/acknowledged
}

func mcpListener(t *testing.T, url, client string, headers http.Header) *listener {
	t.Helper()
	l := &listener{c: make(chan notice, 64), acks: make(chan struct{}, 8)}
	c := sdk.NewClient(&sdk.Implementation{Name: client, Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			n := notice{URI: r.Params.URI}
			if b, err := json.Marshal(r.Params.Meta["event"]); err == nil {
				_ = json.Unmarshal(b, &n.Event)
			}
			l.c <- n
		},
	})
	c.AddReceivingMiddleware(func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if method == "notifications/subscriptions/acknowledged" {
				l.acks <- struct{}{}
			}
			return next(ctx, method, req)
		}
	})
	tr := &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: headerRT{h: headers, next: http.DefaultTransport}}}
	// The session's streams live under Connect's context: Close ends them.
	cs, err := c.Connect(context.Background(), tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	l.cs = cs
	return l
}

// subscribe opens a subscription and returns once the server acknowledged
// it. The SDK's Subscribe only sends the listen request: what the server
// answers comes later, on the stream.
func (l *listener) subscribe(t *testing.T, uri string) {
	t.Helper()
	if err := l.cs.Subscribe(context.Background(), &sdk.SubscribeParams{URI: uri}); err != nil {
		t.Fatalf("subscribe %s: %v", uri, err)
	}
	select {
	case <-l.acks:
	case <-time.After(60 * time.Second):
		t.Fatalf("subscribe %s: no acknowledgement", uri)
	}
}

// next is the next notice heard; a test fails rather than waits forever.
func (l *listener) next(t *testing.T) notice {
	t.Helper()
	select {
	case n := <-l.c:
		return n
	case <-time.After(60 * time.Second):
		t.Fatal("no notification heard")
		return notice{}
	}
}

// TestMCPSubscriptions: a client subscribed to a file hears every change
// the journal tells of it, with the event (type, paths, origin, actor) in
// _meta; a subscription to a directory hears changes beneath it; a URI
// names a file of the subscriber's own sandbox only.
func TestMCPSubscriptions(t *testing.T) {
	rh := newTokenHarness(t)
	base := rh.ts.URL
	a := mcpListener(t, base+"/mcp", "listener-a", bearer("tok-a"))
	b := mcpListener(t, base+"/mcp", "listener-b", bearer("tok-b"))
	a.subscribe(t, "file:///shared.txt")
	b.subscribe(t, "file:///shared.txt")

	writer := func(token, actor string) *sdk.ClientSession {
		h := bearer(token)
		h.Set("X-Sandfs-Actor", actor)
		return mustMCP(t, base+"/mcp", "writer", h)
	}
	wa, wb := writer("tok-a", "writer-a"), writer("tok-b", "writer-b")
	call := func(cs *sdk.ClientSession, tool string, args map[string]any) {
		t.Helper()
		if got, isErr := callText(t, cs, tool, args); isErr {
			t.Fatalf("%s: %s", tool, got)
		}
	}

	// The same path in a: a hears it, b hears only b's own change (its
	// one stream would carry a's notice first had it leaked).
	// The listen's method named in a tool's argument is an argument.
	call(wa, "write_file", map[string]any{"path": "/shared.txt", "content": `{"method":"subscriptions/listen"}`})
	if n := a.next(t); n.URI != "file:///shared.txt" || n.Event.Path != "/shared.txt" || n.Event.Type != "create" ||
		n.Event.Origin != "api" || n.Event.Actor != "writer-a" || n.Event.Seq == 0 {
		t.Fatalf("a heard %+v", n)
	}
	call(wb, "write_file", map[string]any{"path": "/shared.txt", "content": "in b"})
	if n := b.next(t); n.URI != "file:///shared.txt" || n.Event.Actor != "writer-b" {
		t.Fatalf("b heard %+v first; want its own sandbox's change by writer-b", n)
	}

	// Each kind of change, on its own subscription, in a.
	for _, c := range []struct {
		name, uri   string
		do          func()
		typ, path   string
		old         string
		wantDirFlag bool
	}{
		{"edit", "file:///e.txt", func() {
			call(wa, "write_file", map[string]any{"path": "/e.txt", "content": "one\n"})
		}, "create", "/e.txt", "", false},
		{"beneath a directory", "file:///dir", func() {
			call(wa, "create_directory", map[string]any{"path": "/dir/sub"})
		}, "create", "/dir", "", true},
		{"rename away", "file:///from.txt", func() {
			call(wa, "write_file", map[string]any{"path": "/from.txt", "content": "x"})
			call(wa, "move_file", map[string]any{"source": "/from.txt", "destination": "/to.txt"})
		}, "rename", "/to.txt", "/from.txt", false},
		{"delete", "file:///del.txt", func() {
			call(wa, "write_file", map[string]any{"path": "/del.txt", "content": "x"})
			call(wa, "delete", map[string]any{"path": "/del.txt"})
		}, "remove", "/del.txt", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := mcpListener(t, base+"/mcp", "listener-"+c.name, bearer("tok-a"))
			l.subscribe(t, c.uri)
			c.do()
			n := l.next(t)
			for n.Event.Type != c.typ { // the file's making comes first
				n = l.next(t)
			}
			if n.URI != c.uri || n.Event.Type != c.typ || n.Event.Path != c.path || n.Event.OldPath != c.old || n.Event.IsDir != c.wantDirFlag {
				t.Fatalf("heard %+v; want %s of %s (old %q) on %s", n, c.typ, c.path, c.old, c.uri)
			}
		})
	}
}

// TestMCPSubscribeRefused: a URI that is not a file of the sandbox is
// invalid params; a client of a revision before 2026-07-28 is not offered
// subscriptions (they need a session this stateless server does not keep)
// and is told how to listen instead.
func TestMCPSubscribeRefused(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, uri := range []string{"http://example.com/a", "file://host/a", "file:///a?q=1", "file:", "not a uri"} {
		params, _ := json.Marshal(map[string]any{"_meta": map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
			"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw", "version": "1"},
			"io.modelcontextprotocol/clientCapabilities": map[string]any{}},
			"notifications": map[string]any{"resourceSubscriptions": []string{uri}}})
		r := h.do(t, req{Method: "POST", Target: "/mcp", Header: map[string]string{"Accept": "application/json, text/event-stream",
			"Content-Type": "application/json", "Mcp-Method": "subscriptions/listen", "Mcp-Protocol-Version": "2026-07-28"},
			Body: strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":` + string(params) + `}`)})
		if r.Status != 400 || !strings.Contains(string(r.Body), `"code":-32602`) || strings.Contains(string(r.Body), "acknowledged") {
			t.Errorf("listen on %q: %d %s; want invalid params and no acknowledgement", uri, r.Status, r.Body)
		}
	}

	old := sdk.NewClient(&sdk.Implementation{Name: "old", Version: "1"}, nil)
	ocs, err := old.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: h.ts.URL + "/mcp", MaxRetries: -1},
		&sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer ocs.Close()
	if r := ocs.InitializeResult(); r == nil || r.ProtocolVersion != "2025-11-25" || r.Capabilities.Resources == nil || r.Capabilities.Resources.Subscribe {
		t.Fatalf("initialize answered %+v; want 2025-11-25 with resources but no subscribe", r)
	}
	// The SDK's client does not send what is not offered; another may.
	r := h.do(t, req{Method: "POST", Target: "/mcp", Header: map[string]string{"Accept": "application/json, text/event-stream",
		"Content-Type": "application/json", "Mcp-Protocol-Version": "2025-11-25"},
		Body: strings.NewReader(`{"jsonrpc":"2.0","id":8,"method":"resources/subscribe","params":{"uri":"file:///a"}}`)})
	if body := string(r.Body); r.Status != 200 || !strings.Contains(body, `"code":-32600`) ||
		!strings.Contains(body, "subscriptions/listen") || !strings.Contains(body, "changes_since") {
		t.Fatalf("legacy resources/subscribe: %d %s; want invalid request naming subscriptions/listen and changes_since", r.Status, body)
	}
}

// TestMCPListenEndsWithSandbox: removing a sandbox ends its listen
// streams, so the removal does not wait on them.
func TestMCPListenEndsWithSandbox(t *testing.T) {
	rh := newTokenHarness(t)
	l := mcpListener(t, rh.ts.URL+"/mcp", "listener", bearer("tok-a"))
	l.subscribe(t, "file:///who")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if sb := rh.reg.Remove(ctx, "a"); sb == nil || ctx.Err() != nil {
		t.Fatalf("remove: sandbox %v, ctx %v: the listen stream held it", sb, ctx.Err())
	}
}
