package rest

import (
	"net/http"
	"strconv"
	"strings"

	"sandfs/rest/httpkit"
)

// # Sandboxes served by another host of the fleet
//
// With a Placement (the daemon's --placement), a request that names a
// sandbox this daemon does not serve, but that another host holds, is
// answered 307 with Location the holder's URL and the same path and query
// (the named routes' {name}, PATCH and DELETE /v1/sandboxes/{name}, and a
// selector's name, or "default" when none is given), and the header
// X-Sandfs-Holder naming the host; the client sends the same request
// there, body and all. A sandbox whose lease says "moving" is 503 with
// Retry-After on every host, its old one too: nobody serves it until the
// move ends. The answer comes after the browser guard and auth: a request
// this daemon would refuse learns nothing of where sandboxes are. POST
// /v1/sandboxes with a name another host holds is 409 naming it. The
// lookup is the Placement's memory (a watch of the fleet's bucket), never
// a round trip to the broker.

// Placement says which host of the fleet holds a sandbox.
type Placement interface {
	// Placed is the holder of name, from memory (it must never wait on
	// the broker); false when no host holds it.
	Placed(name string) (Placed, bool)
}

// Placed is a sandbox's holder.
type Placed struct {
	Host   string // its name in the fleet
	URL    string // where clients reach it
	Here   bool   // this daemon's host: never redirected to
	Moving bool   // being moved: 503
}

// HolderHeader names the host a 307 sends the client to.
const HolderHeader = "X-Sandfs-Holder"

// movingRetryAfter is the Retry-After of a sandbox moving, in seconds.
const movingRetryAfter = 2

// HeldError is a sandbox another host holds, from the Manager (a Create
// the placement refused): 409 naming the holder.
type HeldError struct {
	Name, Host, URL string
}

func (e *HeldError) Error() string {
	s := "sandbox " + e.Name + " is served by host " + e.Host
	if e.URL != "" {
		s += " (" + e.URL + ")"
	}
	return s
}

// routePlaced answers a request on the sandbox name from the placement:
// 503 while it moves, 307 to its holder when this daemon does not serve
// it. done: the answer is written.
func (s *Server) routePlaced(w http.ResponseWriter, r *http.Request, name string) (done bool, err error) {
	if s.placement == nil || name == "" {
		return false, nil
	}
	p, ok := s.placement.Placed(name)
	if !ok {
		return false, nil
	}
	if p.Moving && !(p.Here && s.reg.Get(name) != nil) { // moving away from here: gate.go refuses the writes only
		w.Header().Set("Retry-After", strconv.Itoa(movingRetryAfter))
		return false, &httpkit.RequestError{Kind: httpkit.KindSandboxMoving, Status: http.StatusServiceUnavailable,
			Msg: "sandbox " + name + " is moving between hosts; try again shortly"}
	}
	if p.Here || p.URL == "" || s.reg.Get(name) != nil {
		return false, nil
	}
	w.Header().Set("Location", strings.TrimSuffix(p.URL, "/")+r.URL.RequestURI())
	w.Header().Set(HolderHeader, p.Host)
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusTemporaryRedirect)
	return true, nil
}

// placed is the placement's holder of name (false: none, or no placement).
func (s *Server) placed(name string) (Placed, bool) {
	if s.placement == nil {
		return Placed{}, false
	}
	return s.placement.Placed(name)
}

// heldElsewhere is the 409 of a name another host holds, nil when none
// does.
func (s *Server) heldElsewhere(name string) error {
	if p, ok := s.placed(name); ok && !p.Here {
		return sandboxRefusal(http.StatusConflict, httpkit.KindAlreadyExists, "create", name,
			(&HeldError{Name: name, Host: p.Host, URL: p.URL}).Error())
	}
	return nil
}
