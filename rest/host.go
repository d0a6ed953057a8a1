package rest

import (
	"context"

	"sandfs/core"
	"sandfs/core/changes"
	"sandfs/rest/httpkit"
)

// host lends the families what they need of the Server (httpkit.Host),
// without making it part of the Server's own methods.
type host struct{ s *Server }

func (h host) Limits() httpkit.Limits { return h.s.limits }

func (h host) SandboxOf(ctx context.Context) *core.Sandbox { return h.s.sandboxOf(ctx) }

func (h host) SandboxValue(ctx context.Context, key any, mk func() any) any {
	e := h.s.entryOf(ctx)
	if e == nil {
		return nil
	}
	if v, ok := e.values.Load(key); ok {
		return v
	}
	v, _ := e.values.LoadOrStore(key, mk())
	return v
}

func (h host) StreamContext(parent context.Context) (context.Context, func()) {
	return h.s.streamContext(parent)
}

func (h host) EndReason(ctx context.Context) string { return h.s.endReason(ctx) }

// ForkOf asks the Manager, which alone knows the forks; the parent is
// looked up, not held: a parent with forks is never removed.
func (h host) ForkOf(ctx context.Context) (changes.Fork, bool) {
	e := h.s.entryOf(ctx)
	if e == nil || h.s.manager == nil {
		return changes.Fork{}, false
	}
	from, cp, ok := h.s.manager.ForkOf(e.name)
	if !ok {
		return changes.Fork{}, false
	}
	return changes.Fork{From: from, Parent: h.s.reg.Get(from), Checkpoint: cp}, true
}
