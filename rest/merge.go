package rest

import (
	"errors"
	"io/fs"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"sandfs/api"
	"sandfs/core/checkpoint"
	"sandfs/rest/httpkit"
)

// mergeFork answers POST /v1/sandboxes/{fork}/merge {into?, dry_run?,
// paths?, strategy?} with 200 and what the merge wrote, removed, skipped
// and met as conflicts; 409 with the same body (and error, code) when the
// strategy "fail" met conflicts and nothing was written. Only the
// daemon's token opens it (auth.go, daemonTokenRoute).
func (s *Server) mergeFork(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	name := ps.ByName("name")
	var req api.MergeRequest
	if err := decodeStrict(w, r, s.limits.MaxJSONBody, &req); err != nil {
		return err
	}
	o := checkpoint.MergeOptions{Paths: req.Paths}
	if req.Strategy != nil {
		switch o.Strategy = *req.Strategy; o.Strategy {
		case checkpoint.StrategyFail, checkpoint.StrategyOurs, checkpoint.StrategyTheirs:
		default:
			return httpkit.InvalidRequest(`request body: "strategy" is %s: want "fail", "ours" or "theirs"`, httpkit.QuoteIfBad(o.Strategy))
		}
	}
	for _, d := range []*bool{req.DryRun, req.DryRunCamel} {
		o.DryRun = o.DryRun || d != nil && *d
	}
	into := ""
	if req.Into != nil {
		if into = *req.Into; into == "" {
			return httpkit.InvalidRequest(`request body: "into" is empty (leave it out to merge into the fork's parent)`)
		}
	}
	if s.manager == nil {
		return noManager(w, "merge", name, "")
	}
	parent, res, err := s.manager.Merge(r.Context(), name, into, o)
	switch {
	case errors.Is(err, checkpoint.ErrConflicts):
		out := httpkit.MergeAnswer(name, parent, res)
		out.Error, out.Code = err.Error(), "EEXIST"
		return httpkit.WriteJSON(w, http.StatusConflict, out)
	case errors.Is(err, fs.ErrInvalid):
		return sandboxRefusal(http.StatusBadRequest, httpkit.KindInvalidRequest, "merge", name, err.Error())
	case err != nil:
		return managerError("merge", name, err)
	}
	return httpkit.WriteJSON(w, http.StatusOK, httpkit.MergeAnswer(name, parent, res))
}
