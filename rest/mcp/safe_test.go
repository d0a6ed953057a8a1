package mcp

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestSafe: a panicking tool handler is a tool error that says nothing of
// the panic, and the log has the panic and its stack.
func TestSafe(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, nil))
	h := safe(log, func(context.Context, *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		panic("secret /host/path")
	})
	req := &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: "boom"}}
	res, err := h(context.Background(), req)
	if err != nil || res == nil || !res.IsError || len(res.Content) != 1 {
		t.Fatalf("got %+v, %v; want one tool error", res, err)
	}
	if tc, ok := res.Content[0].(*sdk.TextContent); !ok || tc.Text != errToolPanic.Error() {
		t.Errorf("the error %+v: want %q alone, nothing of the panic", res.Content[0], errToolPanic)
	}
	if l := buf.String(); !strings.Contains(l, "secret /host/path") || !strings.Contains(l, "safe_test.go") || !strings.Contains(l, "tool=boom") {
		t.Errorf("log %q: want the panic, its stack and the tool", l)
	}
}
