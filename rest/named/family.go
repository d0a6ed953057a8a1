package named

import (
	"context"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

// Family serves the named-sandbox routes over the sandboxes of the server
// that hosts it.
type Family struct {
	host   httpkit.Host
	limits httpkit.Limits
}

// New is the family served by host.
func New(host httpkit.Host) *Family {
	return &Family{host: host, limits: host.Limits()}
}

func (s *Family) sandboxOf(ctx context.Context) *core.Sandbox { return s.host.SandboxOf(ctx) }

func (s *Family) streamContext(parent context.Context) (context.Context, func()) {
	return s.host.StreamContext(parent)
}

func (s *Family) endReason(ctx context.Context) string { return s.host.EndReason(ctx) }
