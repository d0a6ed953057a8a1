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
func safe[In, Out any](log *slog.Logger, h sdk.ToolHandlerFor[In, Out]) sdk.ToolHandlerFor[In, Out] {
	return func(ctx context.Context, req *sdk.CallToolRequest, in In) (res *sdk.CallToolResult, out Out, err error) {
		defer func() {
			if p := recover(); p != nil {
				log.Error("mcp tool panicked", "tool", req.Params.Name, "panic", p, "stack", string(debug.Stack()))
				var zero Out
				res, out, err = nil, zero, errToolPanic
			}
		}()
		return h(ctx, req, in)
	}
}

// addTool is sdk.AddTool of h behind safe.
func addTool[In, Out any](f *Family, s *sdk.Server, t *sdk.Tool, h sdk.ToolHandlerFor[In, Out]) {
	sdk.AddTool(s, t, safe(f.log, h))
}
