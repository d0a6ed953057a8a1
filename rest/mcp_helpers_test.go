package rest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

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
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, ""), res.IsError
}
