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
	h := safe(log, func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, textOut, error) {
		panic("secret /host/path")
	})
	req := &sdk.CallToolRequest{Params: &sdk.CallToolParamsRaw{Name: "boom"}}
	res, out, err := h(context.Background(), req, struct{}{})
	if res != nil || out != (textOut{}) || err != errToolPanic {
		t.Fatalf("got %v, %v, %v; want errToolPanic alone", res, out, err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Errorf("the error %q carries the panic", err)
	}
	if l := buf.String(); !strings.Contains(l, "secret /host/path") || !strings.Contains(l, "safe_test.go") || !strings.Contains(l, "tool=boom") {
		t.Errorf("log %q: want the panic, its stack and the tool", l)
	}
}
