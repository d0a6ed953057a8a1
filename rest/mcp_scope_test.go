package rest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/core/journal"
)

// TestMCPScope: /mcp acts on the token's own sandbox (a's token on a, the
// daemon's on default); /v1/sandboxes/NAME/mcp on NAME, which a sandbox
// token reaches only for its own; no token, or a wrong one, is 401.
func TestMCPScope(t *testing.T) {
	rh := newTokenHarness(t)
	base := rh.ts.URL
	for _, c := range []struct {
		name, path, token, wantWho string // wantWho "": the connect is refused
		wantErr                    string
	}{
		{"own token, /mcp", "/mcp", "tok-a", "a", ""},
		{"other's token, /mcp", "/mcp", "tok-b", "b", ""},
		{"daemon token, /mcp", "/mcp", "daemon-tok", "default", ""},
		{"own token, named", "/v1/sandboxes/a/mcp", "tok-a", "a", ""},
		{"own token, sprites", "/v1/sprites/a/mcp", "tok-a", "a", ""},
		{"daemon token, named", "/v1/sandboxes/b/mcp", "daemon-tok", "b", ""},
		{"a's token on b", "/v1/sandboxes/b/mcp", "tok-a", "", "Forbidden"},
		{"a's token on default", "/v1/sandboxes/default/mcp", "tok-a", "", "Forbidden"},
		{"a's token on one not served", "/v1/sandboxes/zz/mcp", "tok-a", "", "Forbidden"},
		{"daemon token on one not served", "/v1/sandboxes/zz/mcp", "daemon-tok", "", "Not Found"},
		{"no token", "/mcp", "", "", "Unauthorized"},
		{"wrong token", "/v1/sandboxes/a/mcp", "tok-nope", "", "Unauthorized"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hdr := http.Header{}
			if c.token != "" {
				hdr = bearer(c.token)
			}
			cs, err := mcpConnect(t, base+c.path, "scope-test", hdr)
			if c.wantWho == "" {
				if err == nil {
					t.Fatalf("connected; want a refusal")
				}
				if !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("refusal %v; want %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got, isErr := callText(t, cs, "read_text_file", map[string]any{"path": "/who"}); isErr || got != c.wantWho {
				t.Fatalf("/who reads %q (isError %v), want %q", got, isErr, c.wantWho)
			}
		})
	}
	// a's token writes into a alone.
	cs := mustMCP(t, base+"/mcp", "scope-test", bearer("tok-a"))
	if got, isErr := callText(t, cs, "write_file", map[string]any{"path": "/mine", "content": "by a"}); isErr {
		t.Fatal(got)
	}
	for name, root := range rh.roots {
		_, err := os.Stat(filepath.Join(root, "mine"))
		if (name == "a") != (err == nil) {
			t.Errorf("sandbox %s: /mine stat %v", name, err)
		}
	}
}

// TestMCPActor: a change is journaled with origin api and, as actor, the
// X-Sandfs-Actor header when given, else the client's clientInfo.name; a
// name the header check refuses is dropped, not an error.
func TestMCPActor(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	sb := h.srv.sandboxOf(context.Background())
	for _, c := range []struct {
		name, client, header, want string
	}{
		{"client name", "claude-code", "", "claude-code"},
		{"header wins", "claude-code", "agent-7", "agent-7"},
		{"reserved client name", "fuse", "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			hdr := http.Header{}
			if c.header != "" {
				hdr.Set("X-Sandfs-Actor", c.header)
			}
			cs := mustMCP(t, h.ts.URL+"/mcp", c.client, hdr)
			seq := sb.Journal().Seq()
			p := "/actor-" + strings.ReplaceAll(c.name, " ", "-")
			if got, isErr := callText(t, cs, "write_file", map[string]any{"path": p, "content": "x"}); isErr {
				t.Fatal(got)
			}
			evs, _ := sb.Journal().Since(seq, 100)
			found := false
			for _, e := range evs {
				if e.Path != p {
					continue
				}
				found = true
				if e.Origin != journal.API || e.Actor != c.want {
					t.Errorf("event %s %s: origin %q actor %q, want api %q", e.Type, e.Path, e.Origin, e.Actor, c.want)
				}
			}
			if !found {
				t.Fatalf("no event for %s in %+v", p, evs)
			}
		})
	}
}

// TestMCPRefusalShape: what the SDK or the router refuses on an MCP path
// (a method, a missing Accept, a body that is no JSON-RPC message) is a
// JSON-RPC error with its status, as the wrapper's own refusals are.
func TestMCPRefusalShape(t *testing.T) {
	h := newHarness(t, harnessOpts{Token: "tok"})
	js := map[string]string{"Content-Type": "application/json"}
	both := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	for _, c := range []struct {
		name   string
		r      req
		status int
	}{
		{"PUT /mcp", req{Method: "PUT", Target: "/mcp"}, 405},
		{"PUT named", req{Method: "PUT", Target: "/v1/sandboxes/default/mcp"}, 405},
		{"GET /mcp", req{Method: "GET", Target: "/mcp"}, 405},
		{"DELETE named", req{Method: "DELETE", Target: "/v1/sandboxes/default/mcp"}, 405},
		{"no Accept", req{Method: "POST", Target: "/mcp", Header: js, Body: strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)}, 400},
		{"not JSON-RPC", req{Method: "POST", Target: "/mcp", Header: both, Body: strings.NewReader(`[1,2`)}, 400},
		{"no token", req{Method: "POST", Target: "/mcp", Header: both, NoAuth: true, Body: strings.NewReader(`{}`)}, 401},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, c.r)
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Body)
			}
			if err := checkFamilyShape(FamilyMCP, r); err != nil {
				t.Fatalf("%v: %s", err, r.Body)
			}
		})
	}
}

// TestMCPLegacyClient: a client of the 2025-06-18 protocol (initialize,
// then each call with MCP-Protocol-Version and no session) is served
// statelessly: initialize answers no Mcp-Session-Id, and a tools/call
// made on its own runs, its change named by X-Sandfs-Actor.
func TestMCPLegacyClient(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	hdr := map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
	r := h.do(t, req{Method: "POST", Target: "/mcp", Header: hdr, Body: strings.NewReader(
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"old-client","version":"1"}}}`)})
	if r.Status != 200 || r.Header.Get("Mcp-Session-Id") != "" || !strings.Contains(string(r.Body), `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("initialize: %d session %q: %s", r.Status, r.Header.Get("Mcp-Session-Id"), r.Body)
	}
	hdr["MCP-Protocol-Version"] = "2025-06-18"
	hdr["X-Sandfs-Actor"] = "old-client"
	r = h.do(t, req{Method: "POST", Target: "/mcp", Header: hdr, Body: strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)})
	if r.Status != 202 {
		t.Fatalf("initialized: %d %s", r.Status, r.Body)
	}
	r = h.do(t, req{Method: "POST", Target: "/mcp", Header: hdr, Body: strings.NewReader(
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/old.txt","content":"hi"}}}`)})
	if r.Status != 200 || !strings.Contains(string(r.Body), "Successfully wrote to /old.txt") {
		t.Fatalf("tools/call: %d %s", r.Status, r.Body)
	}
	sb := h.srv.sandboxOf(context.Background())
	evs, _ := sb.Journal().Since(0, 100)
	for _, e := range evs {
		if e.Path == "/old.txt" && (e.Actor != "old-client" || e.Origin != journal.API) {
			t.Errorf("event %+v: want actor old-client, origin api", e)
		}
	}
}
