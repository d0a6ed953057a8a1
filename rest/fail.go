package rest

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"sandfs/rest/httpkit"
	"strings"
)

// fail classifies err, logs what the client will not see, and renders it in
// the family's shape.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, fam family, pattern string, err error) {
	k := httpkit.Classify(err)
	if k.Internal {
		id := errorID()
		s.log.Error("request failed", "id", id, "method", r.Method, "route", pattern, "err", err)
		k.Detail = "internal error " + id + "; the server log has the details"
	}
	if k.Kind == httpkit.KindPreconditionFailed && k.ETag != "" {
		w.Header().Set("ETag", k.ETag)
	}
	fam.render(w, k)
}

func errorID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// family is a route family's error shape.
type family struct {
	name   string
	render func(w http.ResponseWriter, k httpkit.ErrKind)
}

func familyOf(name string) family {
	switch name {
	case FamilyAgent:
		return family{name, renderAgentProblem}
	case FamilyAIOv1:
		return family{name, renderAIOv1}
	case FamilyAIOv2:
		return family{name, renderAIOv2}
	case FamilyNamed:
		return family{name, renderNamed}
	default:
		// Service routes (health, openapi) and unknown paths speak problem+json
		// too: the only error they give is 401/404/405.
		return family{FamilyService, renderAgentProblem}
	}
}

// familyForPath picks the family of a path no route matched (404, 405).
func familyForPath(p string) family {
	switch {
	case strings.HasPrefix(p, "/v1/fs/"):
		return familyOf(FamilyAgent)
	case p == "/v1/file" || strings.HasPrefix(p, "/v1/file/"):
		return familyOf(FamilyAIOv1)
	case strings.HasPrefix(p, "/v2/"):
		return familyOf(FamilyAIOv2)
	case strings.HasPrefix(p, "/v1/sandboxes/"), strings.HasPrefix(p, "/v1/sprites/"):
		return familyOf(FamilyNamed)
	}
	return familyOf(FamilyService)
}

// notFound answers a path no route matches.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if s.refuseBrowser(w, r) {
		return
	}
	s.familyForPath(r.URL.Path).render(w, httpkit.ErrKind{Kind: httpkit.KindRouteNotFound, Status: http.StatusNotFound,
		Detail: "no route " + r.Method + " " + r.URL.Path})
}

// methodNotAllowed answers a known path asked with the wrong method
// (httprouter has set Allow).
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	if s.refuseBrowser(w, r) {
		return
	}
	s.familyForPath(r.URL.Path).render(w, httpkit.ErrKind{Kind: httpkit.KindMethodNotAllowed, Status: http.StatusMethodNotAllowed,
		Detail: "method " + r.Method + " not allowed on " + r.URL.Path + "; allowed: " + w.Header().Get("Allow")})
}
