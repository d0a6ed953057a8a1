package named

import (
	"net/http"

	"github.com/julienschmidt/httprouter"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/rest/httpkit"
)

// The named family's history routes (api.md §5a): checkpoints of a
// sandbox's tree and restore. Thin: core does the work, httpkit/errors.go maps
// its errors (unknown checkpoint 404, no state 409, a refused path 400).

func wireCheckpoint(cp checkpoint.Checkpoint) api.Checkpoint {
	return api.Checkpoint{ID: cp.ID, Name: cp.Name, Reason: cp.Reason, Seq: cp.Seq, CreatedAt: cp.Created.UTC(),
		Files: cp.Files, Dirs: cp.Dirs, Symlinks: cp.Symlinks, Bytes: cp.Bytes, NewBytes: cp.NewBytes, SkipExcluded: cp.SkipExcluded}
}

type namedRestoreRequest struct {
	Checkpoint  *string  `json:"checkpoint"`
	Paths       []string `json:"paths"`
	Actor       string   `json:"actor"`
	DryRun      *bool    `json:"dry_run"`
	DryRunCamel *bool    `json:"dryRun"`
}

// maxCheckpointName bounds a checkpoint's name on the wire.
const maxCheckpointName = 256

// namedSandbox is the sandbox {name} itself, for the routes that reach
// past namedFS.
func (s *Family) namedSandbox(r *http.Request) *core.Sandbox { return s.host.SandboxOf(r.Context()) }

// namedCheckpointCreate: POST /checkpoints {name?, skipExcluded?} → 201.
func (s *Family) namedCheckpointCreate(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb := s.namedSandbox(r)
	var req api.CheckpointRequest
	if r.ContentLength != 0 {
		if err := httpkit.DecodeJSON(w, r, s.limits.MaxJSONBody, &req); err != nil {
			return err
		}
	}
	if len(req.Name) > maxCheckpointName {
		return httpkit.InvalidRequest("name is %d bytes; at most %d", len(req.Name), maxCheckpointName)
	}
	if err := httpkit.CheckLabel("name", req.Name); err != nil {
		return err
	}
	cp, err := checkpoint.Create(r.Context(), sb, checkpoint.Options{Name: req.Name, SkipExcluded: req.SkipExcluded})
	if err != nil {
		return err
	}
	return httpkit.WriteJSON(w, http.StatusCreated, wireCheckpoint(cp))
}

// namedCheckpointList: GET /checkpoints, oldest first.
func (s *Family) namedCheckpointList(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb := s.namedSandbox(r)
	list, err := checkpoint.List(sb)
	if err != nil {
		return err
	}
	out := api.CheckpointList{Checkpoints: make([]api.Checkpoint, len(list)), Count: len(list)}
	for i, cp := range list {
		out.Checkpoints[i] = wireCheckpoint(cp)
	}
	return httpkit.WriteJSON(w, http.StatusOK, out)
}

// namedCheckpointGet: GET /checkpoints/:id.
func (s *Family) namedCheckpointGet(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb := s.namedSandbox(r)
	cp, err := checkpoint.ByID(sb, ps.ByName("id"))
	if err != nil {
		return err
	}
	return httpkit.WriteJSON(w, http.StatusOK, wireCheckpoint(cp))
}

// namedCheckpointDelete: DELETE /checkpoints/:id.
func (s *Family) namedCheckpointDelete(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb := s.namedSandbox(r)
	id := ps.ByName("id")
	if err := checkpoint.Delete(sb, id); err != nil {
		return err
	}
	return httpkit.WriteJSON(w, http.StatusOK, api.CheckpointDeleted{ID: id, Deleted: true})
}

// namedRestore: POST /restore {checkpoint, paths?, actor?, dry_run?}. The
// request's X-Sandfs-Actor is not the restore's: its changes carry
// restore:<checkpoint>.
func (s *Family) namedRestore(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb := s.namedSandbox(r)
	var req namedRestoreRequest
	if err := httpkit.DecodeJSON(w, r, s.limits.MaxJSONBody, &req); err != nil {
		return err
	}
	if req.Checkpoint == nil || *req.Checkpoint == "" {
		return httpkit.InvalidRequest(`missing required field "checkpoint"`)
	}
	if err := httpkit.CheckActor("actor", req.Actor); err != nil {
		return err
	}
	dry := req.DryRun
	if dry == nil {
		dry = req.DryRunCamel
	}
	res, err := checkpoint.Restore(r.Context(), sb, checkpoint.RestoreOptions{Checkpoint: *req.Checkpoint, Paths: req.Paths,
		Actor: req.Actor, DryRun: dry != nil && *dry})
	if err != nil {
		return err
	}
	return httpkit.WriteJSON(w, http.StatusOK, httpkit.RestoreAnswer(res))
}
