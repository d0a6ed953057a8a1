package rest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"sandfs/rest/httpkit"
)

// # A sandbox's writes gated (a move)
//
// While the daemon moves a sandbox to another host (daemon/move.go), its
// last checkpoint must hold every write it answered: GateWrites refuses
// every request on the sandbox that may write (any method but GET, HEAD
// and OPTIONS, on every family, the MCP's POSTs too) with 503 and
// Retry-After, then waits for the writes already let in to end. Reads are
// served until the sandbox stops being served here. A gate is the
// sandbox's while it is served: a sandbox served again starts ungated.

// writeGate is one sandbox's gate: on, and the writes let in that have
// not ended. A write adds itself before it looks at on, and the gate sets
// on before it counts the writes, so one of the two sees the other.
type writeGate struct {
	on     atomic.Bool
	writes atomic.Int64
}

// gatePoll is how often GateWrites looks at the writes in flight.
const gatePoll = 5 * time.Millisecond

// GateWrites refuses the writes to name from now on, and returns once
// the writes already let in ended: an error when ctx ended first (the
// gate stays on: UngateWrites lifts it), or name is not served.
func (g *Registry) GateWrites(ctx context.Context, name string) error {
	g.mu.RLock()
	e := g.m[name]
	g.mu.RUnlock()
	if e == nil {
		return fmt.Errorf("sandbox %s is not served", name)
	}
	e.gate.on.Store(true)
	for e.gate.writes.Load() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("sandbox %s: %d writes still running: %w", name, e.gate.writes.Load(), ctx.Err())
		case <-time.After(gatePoll):
		}
	}
	return nil
}

// UngateWrites lets the writes to name in again.
func (g *Registry) UngateWrites(name string) {
	g.mu.RLock()
	e := g.m[name]
	g.mu.RUnlock()
	if e != nil {
		e.gate.on.Store(false)
	}
}

// gated reports whether name is served with its writes gated.
func (g *Registry) gated(name string) bool {
	g.mu.RLock()
	e := g.m[name]
	g.mu.RUnlock()
	return e != nil && e.gate.on.Load()
}

// mayWrite reports whether the request may change something.
func mayWrite(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// errMovingHere is a write refused while the sandbox moves away.
func errMovingHere(w http.ResponseWriter, name string) error {
	w.Header().Set("Retry-After", strconv.Itoa(movingRetryAfter))
	return &httpkit.RequestError{Kind: httpkit.KindSandboxMoving, Status: http.StatusServiceUnavailable,
		Msg: "sandbox " + name + " is moving between hosts; its writes wait until it is served on the new host"}
}

// enterWrite lets a write to the held sandbox e in (release ends it), or
// refuses it while its writes are gated. A read passes.
func enterWrite(w http.ResponseWriter, r *http.Request, e *regEntry) (release func(), err error) {
	if e == nil || !mayWrite(r) {
		return func() {}, nil
	}
	e.gate.writes.Add(1)
	if e.gate.on.Load() {
		e.gate.writes.Add(-1)
		return nil, errMovingHere(w, e.name)
	}
	return func() { e.gate.writes.Add(-1) }, nil
}
