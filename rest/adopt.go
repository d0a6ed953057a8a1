package rest

import (
	"errors"
	"io/fs"
	"net/http"

	"sandfs/api"
	"sandfs/rest/httpkit"
)

// adopt answers POST /v1/sandboxes {name, adopt: true, checkpoint?} with
// 201 {name, token, quota, checkpoint, seq, from, fetched: {objects,
// bytes}, lost: [{seq, type, path, oldPath?, host, time}]}: the sandbox
// taken up on this host from the fleet's checkpoint of it (the newest
// unless named), and the changes the fleet heard of after it (api.md,
// "Taking a sandbox up from the fleet"). Only the daemon's token gets here
// (auth.go: a sandbox token is refused every route on no sandbox but the
// list). Its token and quota are the sandbox's own, from the fleet: a
// quota or a from in the request is a 400.
func (s *Server) adopt(w http.ResponseWriter, r *http.Request, name string, req sandboxCreateRequest) error {
	if req.From != nil {
		return httpkit.InvalidRequest(`request body: "from" makes a fork; "adopt" takes a sandbox up from the fleet: not both`)
	}
	if req.Quota != nil {
		return httpkit.InvalidRequest(`request body: an adopted sandbox keeps the quota the fleet holds for it: leave "quota" out`)
	}
	cp := ""
	if req.Checkpoint != nil {
		if cp = *req.Checkpoint; cp == "" {
			return httpkit.InvalidRequest(`request body: "checkpoint" is empty (leave it out to take the fleet's newest)`)
		}
	}
	a, ok := s.manager.(Adopter)
	if !ok {
		return sandboxRefusal(http.StatusNotImplemented, httpkit.KindNotSupported, "adopt", name,
			"this daemon takes no sandbox up from the fleet: it needs --sandboxes DIR and --replicate")
	}
	made, err := a.Adopt(r.Context(), name, cp)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return sandboxRefusal(http.StatusNotImplemented, httpkit.KindNotSupported, "adopt", name, err.Error())
	case errors.Is(err, fs.ErrNotExist):
		return sandboxRefusal(http.StatusNotFound, httpkit.KindNotFound, "adopt", name, err.Error())
	case err != nil:
		return managerError("adopt", name, err)
	}
	if made.Lost == nil {
		made.Lost = []api.Lost{}
	}
	return httpkit.WriteJSON(w, http.StatusCreated, made)
}
