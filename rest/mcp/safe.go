package mcp

import (
	"context"
	"errors"
	"log/slog"
	"runtime/debug"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The SDK runs a tool's handler on a goroutine of its own and recovers no
// panic, so a panic there would end the daemon: rest's recovery guards the
// HTTP handler's goroutine only. addTool registers every tool behind a
// recover that logs the panic with its stack and answers a tool error that
// carries neither.

var errToolPanic = errors.New("internal error: the tool failed; the daemon's log has the details")

// safe is h behind a recover.
func safe(log *slog.Logger, h sdk.ToolHandler) sdk.ToolHandler {
	return func(ctx context.Context, req *sdk.CallToolRequest) (res *sdk.CallToolResult, err error) {
		defer func() {
			if p := recover(); p != nil {
				log.Error("mcp tool panicked", "tool", req.Params.Name, "panic", p, "stack", string(debug.Stack()))
				res, err = toolError(errToolPanic), nil
			}
		}()
		return h(ctx, req)
	}
}

// toolError is a tool result that says err, with isError set.
func toolError(err error) *sdk.CallToolResult {
	var res sdk.CallToolResult
	res.SetError(err)
	return &res
}
