package httpkit

import (
	"net/http"

	"github.com/julienschmidt/httprouter"
)

// Route is one line of the route table.
type Route struct {
	Method string // GET, HEAD, PUT, POST, PATCH, DELETE
	Path   string // httprouter pattern (":name" for a path parameter)
	Family string // FamilyService, FamilyAgent, …: which error shape the route speaks
	Auth   bool   // whether the token (when one is configured) is required
}

// Families: each renders errors in its own shape (see errors.go).
const (
	FamilyService  = "service"       // /health, /v1/ping, /openapi.json
	FamilyAgent    = "sandbox-agent" // /v1/fs/*
	FamilyAIOv1    = "aio-v1"        // /v1/file/*: AIO envelope, filesystem failures 200 + success:false
	FamilyAIOv2    = "aio-v2"        // /v2/fs/*, /v2/watch: AIO envelope, the status of api.md §2
	FamilyNamed    = "named"         // /v1/sandboxes/{name}/fs/*, /v1/sprites/{name}/fs/*: {error, code, path}
	FamilySandboxd = "sandboxd"      // /v1/files/*, /v1/metadata (KEP-539.2): {code, message}
	FamilyMCP      = "mcp"           // /mcp, /v1/sandboxes/{name}/mcp: JSON-RPC errors (rest/mcp)
)

// HandlerFunc is a thin handler: decode, one core call, encode. A non-nil
// error has written nothing yet; handle renders it in the route's family.
type HandlerFunc func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error

// NewRoute is a table line's route: its method, path pattern, family and
// whether the token applies.
func NewRoute(method, path, family string, auth bool) Route {
	return Route{Method: method, Path: path, Family: family, Auth: auth}
}
