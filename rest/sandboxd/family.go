package sandboxd

import (
	"net/http"

	"sandfs/rest/httpkit"
)

// Family serves the sandboxd routes over the sandboxes of the server that
// hosts it.
type Family struct {
	host   httpkit.Host
	limits httpkit.Limits
}

// New is the family served by host.
func New(host httpkit.Host) *Family {
	return &Family{host: host, limits: host.Limits()}
}

const authed = httpkit.Authed // every sandboxd route takes the token when one is configured

// Routes are the family's lines of the route table. The comment of each
// names its parameters (q: query, b: body).
func (f *Family) Routes() []httpkit.Line {
	d := httpkit.Shape{Name: httpkit.FamilySandboxd, Render: Render}
	return []httpkit.Line{
		// sandboxd (api.md §5b, KEP-539.2 filesystem.yaml).
		d.On("GET", "/v1/files/*path", authed, f.get),       // → bytes, or DirectoryListing for a directory
		d.On("HEAD", "/v1/files/*path", authed, f.get),      // → the GET's headers: 200 exists, 404 not
		d.On("PUT", "/v1/files/*path", authed, f.put),       // q: mode (^0[0-7]{3}$, default 0644); b: bytes or multipart "file" → 204
		d.On("DELETE", "/v1/files/*path", authed, f.delete), // q: recursive → 204
		d.On("GET", "/v1/metadata", authed, f.metadata),     // → {env}
		d.On("GET", "/v1/watch", authed, f.watch),           // q: path (required), recursive, since; Last-Event-ID → SSE (watch.go)
	}
}

// Error is the standard's error body.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Render writes a classified error as the standard's {code, message}; the
// code is the gRPC canonical name of the status, as the reference daemon
// writes them (CONFLICT, which has no canonical name, is its own).
func Render(w http.ResponseWriter, k httpkit.ErrKind) {
	httpkit.WriteError(w, k.Status, "application/json", Error{Code: Code(k.Status), Message: k.Detail})
}

// Code is the error code of an HTTP status.
func Code(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "UNAUTHENTICATED"
	case http.StatusForbidden, http.StatusMisdirectedRequest:
		return "PERMISSION_DENIED"
	case http.StatusNotFound:
		return "NOT_FOUND"
	case http.StatusMethodNotAllowed:
		return "UNIMPLEMENTED"
	case http.StatusConflict:
		return "CONFLICT"
	case http.StatusPreconditionFailed:
		return "FAILED_PRECONDITION"
	case http.StatusRequestedRangeNotSatisfiable:
		return "OUT_OF_RANGE"
	case http.StatusRequestEntityTooLarge, http.StatusTooManyRequests, http.StatusInsufficientStorage:
		return "RESOURCE_EXHAUSTED"
	case http.StatusServiceUnavailable:
		return "UNAVAILABLE"
	}
	if status >= 500 {
		return "INTERNAL"
	}
	return "INVALID_ARGUMENT"
}
