package httpkit

import (
	"context"
	"net/http"

	"sandfs/core"
	"sandfs/core/changes"
)

// Limits bound request bodies. Zero fields take the defaults of api.md §1
// (rest.DefaultLimits).
type Limits struct {
	MaxJSONBody int64 // default 64 MiB -> 413
	MaxTarBody  int64 // default 4 GiB (upload-batch body) -> 413
}

// Host is what a family needs of the server that serves its routes. The
// server resolves the sandbox a request acts on before the handler runs
// and holds it until the handler returns; a family takes it from the
// request's context through SandboxOf.
type Host interface {
	// Limits are the server's body limits, defaults filled in.
	Limits() Limits
	// SandboxOf is the sandbox the request whose context is ctx acts on;
	// under a context of no request (a test calling a handler's helper),
	// "default", nil when it is not served.
	SandboxOf(ctx context.Context) *core.Sandbox
	// SandboxValue is the value kept under key beside the request's
	// sandbox, made by mk on first use; it goes with the sandbox when the
	// sandbox is removed. nil when the request acts on no sandbox.
	SandboxValue(ctx context.Context, key any, mk func() any) any
	// StreamContext is the context a stream waits under: parent, also
	// ended when the daemon stops and when the request's sandbox is
	// removed. done must be called once the stream has sent its last
	// message.
	StreamContext(parent context.Context) (ctx context.Context, done func())
	// EndReason is why the streams of the request whose context is ctx end
	// other than by their client ("" when they do not): the last message's
	// reason.
	EndReason(ctx context.Context) string
	// ForkOf is where the request's sandbox was forked from: its parent
	// (Parent nil when no longer served) and the parent's checkpoint;
	// false when it is not a fork.
	ForkOf(ctx context.Context) (changes.Fork, bool)
}

// Renderer writes a classified error in a family's shape.
type Renderer func(w http.ResponseWriter, k ErrKind)

// Shape is a family's error shape: the name its routes carry
// (Route.Family) and the renderer of its errors.
type Shape struct {
	Name   string
	Render Renderer
}

// Line is a line of the route table: the route, its handler, and the
// renderer of the family it belongs to.
type Line struct {
	Route
	Handle HandlerFunc
	Render Renderer
}

// On is a line of the family's table: method and path pattern, whether the
// token applies, the handler.
func (f Shape) On(method, path string, auth bool, h HandlerFunc) Line {
	return Line{Route: Route{Method: method, Path: path, Family: f.Name, Auth: auth}, Handle: h, Render: f.Render}
}

// Whether a route needs the token, for the table lines.
const (
	Public = false // no token needed
	Authed = true  // token needed when one is configured
)
