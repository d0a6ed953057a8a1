package rest

import (
	"context"
	"errors"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"sandfs/api"
	"sandfs/core"
	"sandfs/rest/httpkit"
)

// Mover is a Manager that moves a sandbox to another host of the fleet
// (daemon/move.go).
type Mover interface {
	Move(ctx context.Context, name, to string) (api.SandboxMoved, error)
}

// MoveError is a move refused, or not finished, with its status: 400 a
// bad target, 404 a sandbox not served here, 409 one that cannot move,
// 501 a daemon without the fleet's parts, 502 the new host refused, 504
// the bound passed; Msg says what was done.
type MoveError struct {
	Status int
	Msg    string
}

func (e *MoveError) Error() string { return e.Msg }

type moveRequest struct {
	To *string `json:"to"`
}

// moveSandbox answers POST /v1/sandboxes/{name}/move {to} with 200 {name,
// from, to, url, checkpoint, seq, seconds, sent, fetched}: the sandbox
// handed to host to (docs/fleet.md, "Moving a sandbox"). The daemon's
// token only (auth.go).
func (s *Server) moveSandbox(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	name := ps.ByName("name")
	var req moveRequest
	if err := decodeStrict(w, r, s.limits.MaxJSONBody, &req); err != nil {
		return err
	}
	if s.reg.Get(name) == nil {
		return unknownSandbox(selectPath, name)
	}
	if req.To == nil || *req.To == "" {
		return httpkit.InvalidRequest(`request body: missing required field "to" (the host to move the sandbox to)`)
	}
	if err := core.CheckSandboxName(*req.To); err != nil {
		return sandboxRefusal(http.StatusBadRequest, httpkit.KindInvalidTarget, "move", name, `"to": a host's name is a DNS label: `+err.Error())
	}
	m, ok := s.manager.(Mover)
	if !ok {
		return sandboxRefusal(http.StatusNotImplemented, httpkit.KindNotSupported, "move", name,
			"this daemon moves no sandbox: it needs --sandboxes DIR, --placement and --replicate")
	}
	out, err := m.Move(r.Context(), name, *req.To)
	var me *MoveError
	switch {
	case errors.As(err, &me):
		kind := map[int]httpkit.Kind{http.StatusBadRequest: httpkit.KindInvalidTarget, http.StatusNotFound: httpkit.KindNotFound,
			http.StatusConflict: httpkit.KindInvalidTarget, http.StatusNotImplemented: httpkit.KindNotSupported,
			http.StatusGatewayTimeout: httpkit.KindTimeout}[me.Status]
		if kind == "" {
			kind = httpkit.KindIO
		}
		return sandboxRefusal(me.Status, kind, "move", name, me.Msg)
	case err != nil:
		return managerError("move", name, err)
	}
	return httpkit.WriteJSON(w, http.StatusOK, out)
}
