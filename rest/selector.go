package rest

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"strings"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

// # Which sandbox a request acts on
//
// The named family names its sandbox in the path (/v1/sandboxes/{name}/…).
// The sandbox-agent (/v1/fs/*), AIO (/v1/file/*, /v2/*) and sandboxd
// (/v1/files/*, /v1/metadata, /v1/watch) families name none: the sandbox selector picks it, the header X-Sandfs-Sandbox: NAME
// or the query parameter sandbox=NAME (the same name in both when both are
// given); without one, a sandbox token selects its own sandbox and the
// daemon's token (or no auth) selects "default".
//
// The route wrapper (routes.go) resolves the name once, at the start of
// the request, in the Registry, and holds the sandbox until the request
// ends (a stream until it has sent its last message), so that
// Registry.Remove can wait for it. The handlers take the sandbox from the
// request's context (sandboxOf); an unknown name is 404 in the family's
// shape (the named family: ENOENT with the name as path).

// selectorHeader and selectorQuery carry the sandbox selector.
const (
	selectorHeader = "X-Sandfs-Sandbox"
	selectorQuery  = "sandbox"
)

// removedReason is a stream's last message when its sandbox is removed.
const removedReason = "the sandbox was removed"

// selectorKind is how a route names its sandbox.
type selectorKind uint8

const (
	selectNone     selectorKind = iota // service routes, GET /v1/sandboxes: no sandbox
	selectPath                         // the named family: the path's {name}
	selectImplicit                     // agent, AIO and sandboxd: the selector, or the token's sandbox, or "default"
)

func routeSelector(rt Route) selectorKind {
	switch {
	case strings.HasSuffix(rt.Path, "/:name/move"):
		// A move stops serving the sandbox: it holds none, or it would
		// wait for itself (move.go).
		return selectNone
	case rt.Family == FamilyAgent || rt.Family == FamilyAIOv1 || rt.Family == FamilyAIOv2 || rt.Family == FamilySandboxd:
		return selectImplicit
	case (rt.Family == FamilyNamed || rt.Family == FamilyMCP) && strings.Contains(rt.Path, "/:name/"):
		return selectPath
	case rt.Family == FamilyMCP:
		return selectImplicit // /mcp: the token's own sandbox, as the agent and AIO routes
	}
	return selectNone
}

// selectorName is the sandbox the selector names, "" when it names none.
// A header and a query parameter that disagree are a 400.
func selectorName(r *http.Request) (string, error) {
	h := r.Header.Get(selectorHeader)
	var q string
	if strings.Contains(r.URL.RawQuery, selectorQuery+"=") {
		q = r.URL.Query().Get(selectorQuery) // a malformed query is the handler's 400
	}
	if h != "" && q != "" && h != q {
		return "", httpkit.InvalidRequest("the %s header (%q) and the %s query parameter (%q) name different sandboxes",
			selectorHeader, h, selectorQuery, q)
	}
	if h != "" {
		return h, nil
	}
	return q, nil
}

// namedSandbox is the sandbox the request names: its path's {name}, or
// the selector's name; "" when it names none.
func namedSandbox(sel selectorKind, r *http.Request, ps httprouter.Params) (string, error) {
	switch sel {
	case selectPath:
		return ps.ByName("name"), nil
	case selectImplicit:
		return selectorName(r)
	}
	return "", nil
}

// actsOn is the sandbox a request acts on, from the name it gives (named)
// and the sandbox of its token (own, "" for the daemon's): an agent or AIO
// route naming none acts on own, else on "default".
func actsOn(sel selectorKind, named, own string) string {
	if sel != selectImplicit || named != "" {
		return named
	}
	if own != "" {
		return own
	}
	return core.DefaultSandbox
}

// unknownSandbox is the 404 of a name the registry does not serve.
func unknownSandbox(sel selectorKind, name string) error {
	if sel == selectPath {
		return &fs.PathError{Op: "sandbox", Path: name, Err: unix.ENOENT}
	}
	return &httpkit.RequestError{Kind: httpkit.KindNotFound, Status: http.StatusNotFound, Msg: fmt.Sprintf("sandbox %q is not served", name)}
}

type selectionKey struct{}

// withSandbox holds the sandbox name for the request: r carries it in its
// context, and the caller releases the entry (nil on a route on none) when
// the request ends.
func (s *Server) withSandbox(r *http.Request, sel selectorKind, name string) (*http.Request, *regEntry, error) {
	if sel == selectNone {
		return r, nil, nil
	}
	e := s.reg.acquire(name)
	if e == nil {
		return r, nil, unknownSandbox(sel, name)
	}
	return r.WithContext(context.WithValue(r.Context(), selectionKey{}, e)), e, nil
}

// selection is the sandbox the request holds, nil on a route on none.
func selection(ctx context.Context) *regEntry {
	e, _ := ctx.Value(selectionKey{}).(*regEntry)
	return e
}

// sandboxOf is the sandbox the request whose context is ctx acts on; a
// call under a context of no request (a test calling a handler's helper)
// acts on "default".
func (s *Server) sandboxOf(ctx context.Context) *core.Sandbox {
	if e := s.entryOf(ctx); e != nil {
		return e.sb
	}
	return nil
}

// entryOf is the registry entry sandboxOf answers for.
func (s *Server) entryOf(ctx context.Context) *regEntry {
	if e := selection(ctx); e != nil {
		return e
	}
	s.reg.mu.RLock()
	defer s.reg.mu.RUnlock()
	return s.reg.m[core.DefaultSandbox]
}
