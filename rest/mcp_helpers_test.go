package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The MCP tests' client: the SDK's own, over streamable HTTP to the
// harness's loopback server, with the given headers on every request.

type headerRT struct {
	h    http.Header
	next http.RoundTripper
}

func (rt headerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range rt.h {
		r.Header[k] = vs
	}
	return rt.next.RoundTrip(r)
}

// mcpConnect is a client session to url (the harness's /mcp or a named
// sandbox's), as the client named client, with headers on every request.
func mcpConnect(t *testing.T, url, client string, headers http.Header) (*sdk.ClientSession, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := sdk.NewClient(&sdk.Implementation{Name: client, Version: "1"}, nil)
	tr := &sdk.StreamableClientTransport{Endpoint: url, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: headerRT{h: headers, next: http.DefaultTransport}}}
	cs, err := c.Connect(ctx, tr, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

func mustMCP(t *testing.T, url, client string, headers http.Header) *sdk.ClientSession {
	t.Helper()
	cs, err := mcpConnect(t, url, client, headers)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	return cs
}

func bearer(token string) http.Header {
	return http.Header{"Authorization": {"Bearer " + token}}
}

// callText calls a tool and answers its text (the text blocks joined) and
// whether it is an error result.
func callText(t *testing.T, cs *sdk.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: protocol error: %v", tool, err)
	}
	if !res.IsError && res.StructuredContent != nil {
		checkOutput(t, cs, tool, res.StructuredContent)
	}
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, ""), res.IsError
}

// outputSchemas are the resolved output schemas of the tools a session
// lists, by session and tool name.
var outputSchemas sync.Map // *sdk.ClientSession → map[string]*jsonschema.Resolved

// checkOutput fails t unless out, the structured content a call of tool
// answered, holds to the output schema the tool lists: the daemon marshals
// its tools' outputs without validating them.
func checkOutput(t *testing.T, cs *sdk.ClientSession, tool string, out any) {
	t.Helper()
	v, ok := outputSchemas.Load(cs)
	if !ok {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m := map[string]*jsonschema.Resolved{}
		for tl, err := range cs.Tools(ctx, nil) {
			if err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			if tl.OutputSchema == nil {
				continue
			}
			var s jsonschema.Schema
			b, _ := json.Marshal(tl.OutputSchema)
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatalf("%s: output schema %s: %v", tl.Name, b, err)
			}
			r, err := s.Resolve(nil)
			if err != nil {
				t.Fatalf("%s: output schema %s: %v", tl.Name, b, err)
			}
			m[tl.Name] = r
		}
		v, _ = outputSchemas.LoadOrStore(cs, m)
	}
	r := v.(map[string]*jsonschema.Resolved)[tool]
	if r == nil {
		return
	}
	b, _ := json.Marshal(out)
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: structured content %s: %v", tool, b, err)
	}
	if err := r.Validate(&doc); err != nil {
		t.Errorf("%s: structured content %s breaks its output schema: %v", tool, b, err)
	}
}
