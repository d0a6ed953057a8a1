package rest

import (
	"context"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

func BenchmarkZZMCPRead(b *testing.B) {
	h := newHarness(b, harnessOpts{})
	h.writeFile(b, "/t4k.txt", strings.Repeat("abcdefghijklmno\n", 256))
	c := sdk.NewClient(&sdk.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: h.ts.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	ctx := context.Background()
	b.ResetTimer()
	for range b.N {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "read_text_file", Arguments: map[string]any{"path": "/t4k.txt"}})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
