package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/sys/unix"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/core/pathmatch"
	"sandfs/rest/httpkit"
)

// The sandboxes themselves (api.md §5, "The sandboxes"; sandfs's own),
// under /v1/sandboxes and its alias /v1/sprites:
//
//   - GET lists the sandboxes served, each with its usage and quota (the
//     console's picker reads it);
//   - POST makes one, PATCH sets its quota, DELETE removes it, each through
//     the daemon's Manager (registry.go). Without one, a request that is
//     otherwise right is 405 (the daemon makes no sandboxes): a 4xx, since
//     nothing failed in the server, and only after the checks that do not
//     need a Manager (a bad body 400, an unknown sandbox 404, a taken name
//     409), so the answer says what is wrong with the request first.
//
// Errors speak the named family's shape, the sandbox's name as path. The
// handlers only decode, call the Manager and encode: where a sandbox lives,
// its token file and its mount are the daemon's.

// noManager is the refusal of POST, PATCH and DELETE without a Manager:
// 405, the Allow header naming what the path still takes.
func noManager(w http.ResponseWriter, op, name, allow string) error {
	w.Header().Set("Allow", allow)
	return sandboxRefusal(http.StatusMethodNotAllowed, httpkit.KindMethodNotAllowed, op, name, ErrNoSandboxDir.Error())
}

func quotaSizes(q core.Quota) api.Sizes { return api.Sizes{Bytes: q.Bytes, Entries: q.Entries} }

func usageSizes(u core.Usage) api.Sizes { return api.Sizes{Bytes: u.Bytes, Entries: u.Entries} }

// quotaRequest is a quota in a request: an absent field is 0 (no bound) on
// POST and the current value on PATCH.
type quotaRequest struct {
	Bytes   *int64 `json:"bytes"`
	Entries *int64 `json:"entries"`
}

type sandboxCreateRequest struct {
	Name       *string       `json:"name"`
	Quota      *quotaRequest `json:"quota"`
	From       *string       `json:"from"`       // a fork of this sandbox
	Checkpoint *string       `json:"checkpoint"` // at this checkpoint of it (none: one taken now); of the fleet's, with adopt
	Adopt      *bool         `json:"adopt"`      // taken up from the fleet's checkpoints (adopt.go)
}

type sandboxPatchRequest struct {
	Quota *quotaRequest `json:"quota"`
}

// listSandboxes answers GET /v1/sandboxes: the sandboxes served, "default"
// first, then by name, each with its usage and quota, and a fork with its
// parent and checkpoint (the Manager alone knows forks); to a sandbox
// token, its own sandbox only. It names no host path.
func (s *Server) listSandboxes(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	out := api.SandboxList{Sandboxes: []api.Sandbox{}, DefaultExcludes: pathmatch.DefaultExcludes}
	own := tokenSandbox(r.Context())
	s.reg.each(func(name string, sb *core.Sandbox) {
		if own != "" && name != own {
			return
		}
		u := sb.Quota().Usage()
		e := api.Sandbox{Name: name, Usage: usageSizes(u), Quota: quotaSizes(u.Quota)}
		if s.manager != nil {
			e.From, e.Checkpoint, _ = s.manager.ForkOf(name)
		}
		out.Sandboxes = append(out.Sandboxes, e)
	})
	out.Count = len(out.Sandboxes)
	return httpkit.WriteJSON(w, http.StatusOK, out)
}

// createSandbox answers POST /v1/sandboxes {name, quota?} with 201 {name,
// token, quota}; with from, a fork; with adopt, a sandbox taken up from
// the fleet.
func (s *Server) createSandbox(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req sandboxCreateRequest
	if err := decodeStrict(w, r, s.limits.MaxJSONBody, &req); err != nil {
		return err
	}
	if req.Name == nil {
		return httpkit.InvalidRequest(`request body: missing required field "name"`)
	}
	name := *req.Name
	if err := core.CheckSandboxName(name); err != nil {
		return sandboxRefusal(http.StatusBadRequest, httpkit.KindInvalidPath, "create", name, err.Error())
	}
	q, err := req.Quota.apply(core.Quota{})
	if err != nil {
		return err
	}
	if s.reg.Get(name) != nil {
		return sandboxExists(name)
	}
	if err := s.heldElsewhere(name); err != nil {
		return err
	}
	if s.manager == nil {
		return noManager(w, "create", name, "GET")
	}
	if req.Adopt != nil && *req.Adopt {
		return s.adopt(w, r, name, req)
	}
	if req.From != nil {
		return s.fork(w, r, name, req, q)
	}
	if req.Checkpoint != nil {
		return httpkit.InvalidRequest(`request body: "checkpoint" is a checkpoint of "from", which is missing`)
	}
	token, err := s.manager.Create(r.Context(), name, q)
	if errors.Is(err, ErrNoSandboxDir) {
		return noManager(w, "create", name, "GET")
	}
	if err != nil {
		return managerError("create", name, err)
	}
	return httpkit.WriteJSON(w, http.StatusCreated, api.SandboxCreated{Name: name, Token: token, Quota: quotaSizes(q)})
}

// fork answers POST /v1/sandboxes {name, from, checkpoint?, quota?} with
// 201 {name, token, quota, from, checkpoint, copy?, copyWhy?}: the new
// sandbox is from's tree at the checkpoint (daemon/fork.go), a copy where
// no overlay could be (daemon/fork_copy.go).
func (s *Server) fork(w http.ResponseWriter, r *http.Request, name string, req sandboxCreateRequest, q core.Quota) error {
	from, cp := *req.From, ""
	if err := core.CheckSandboxName(from); err != nil {
		return sandboxRefusal(http.StatusBadRequest, httpkit.KindInvalidPath, "fork", from, "from: "+err.Error())
	}
	if req.Checkpoint != nil {
		if cp = *req.Checkpoint; cp == "" {
			return httpkit.InvalidRequest(`request body: "checkpoint" is empty (leave it out to take one now)`)
		}
	}
	if s.reg.Get(from) == nil {
		if p, ok := s.placed(from); ok && !p.Here {
			return sandboxRefusal(http.StatusConflict, httpkit.KindInvalidTarget, "fork", name,
				(&HeldError{Name: from, Host: p.Host, URL: p.URL}).Error()+": fork it there")
		}
		return unknownSandbox(selectPath, from)
	}
	made, err := s.manager.Fork(r.Context(), name, from, cp, q)
	switch {
	case errors.Is(err, errors.ErrUnsupported):
		return sandboxRefusal(http.StatusNotImplemented, httpkit.KindNotSupported, "fork", name, err.Error())
	case errors.Is(err, checkpoint.ErrUnknown):
		return sandboxRefusal(http.StatusNotFound, httpkit.KindNotFound, "fork", name, "sandbox "+from+" has no checkpoint "+httpkit.QuoteIfBad(cp))
	case err != nil:
		return managerError("fork", name, err)
	}
	return httpkit.WriteJSON(w, http.StatusCreated, api.SandboxCreated{Name: name, Token: made.Token, Quota: quotaSizes(made.Quota),
		From: from, Checkpoint: made.Checkpoint, Copy: made.Copy, CopyWhy: made.CopyWhy})
}

// patchSandbox answers PATCH /v1/sandboxes/{name} {quota} with 200 {name,
// quota, usage}.
func (s *Server) patchSandbox(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	name := ps.ByName("name")
	var req sandboxPatchRequest
	if err := decodeStrict(w, r, s.limits.MaxJSONBody, &req); err != nil {
		return err
	}
	if req.Quota == nil {
		return httpkit.InvalidRequest(`request body: missing required field "quota"`)
	}
	sb := s.reg.Get(name)
	if sb == nil {
		return unknownSandbox(selectPath, name)
	}
	q, err := req.Quota.apply(sb.Quota().Bound())
	if err != nil {
		return err
	}
	if s.manager == nil {
		return noManager(w, "quota", name, "")
	}
	if err := s.manager.SetQuota(r.Context(), name, q); err != nil {
		return managerError("quota", name, err)
	}
	u := sb.Quota().Usage()
	return httpkit.WriteJSON(w, http.StatusOK, api.SandboxQuota{Name: name, Quota: quotaSizes(u.Quota), Usage: usageSizes(u)})
}

// deleteSandbox answers DELETE /v1/sandboxes/{name} with 200 {name,
// removed: true}, once the Manager has unmounted it, ended its streams and
// its requests in flight, and removed its directory.
func (s *Server) deleteSandbox(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	name := ps.ByName("name")
	if s.reg.Get(name) == nil {
		return unknownSandbox(selectPath, name)
	}
	if s.manager == nil {
		return noManager(w, "remove", name, "")
	}
	if err := s.manager.Remove(r.Context(), name); err != nil {
		return managerError("remove", name, err)
	}
	return httpkit.WriteJSON(w, http.StatusOK, api.SandboxRemoved{Name: name, Removed: true})
}

// apply is the quota q asks for over cur (a nil q: cur); a negative
// bound is a 400.
func (q *quotaRequest) apply(cur core.Quota) (core.Quota, error) {
	if q == nil {
		return cur, nil
	}
	for _, f := range []struct {
		name string
		v    *int64
		dst  *int64
	}{{"bytes", q.Bytes, &cur.Bytes}, {"entries", q.Entries, &cur.Entries}} {
		if f.v == nil {
			continue
		}
		if *f.v < 0 {
			return cur, httpkit.InvalidRequest("quota.%s must be 0 (no bound) or more, got %d", f.name, *f.v)
		}
		*f.dst = *f.v
	}
	return cur, nil
}

// managerError is a failure of the Manager in the named family's shape:
// a *HeldError (another host holds the name) and fs.ErrExist 409, fs.ErrNotExist 404, fs.ErrPermission (a sandbox the
// daemon did not make at run time) 403; anything else as httpkit.Classify says.
func managerError(op, name string, err error) error {
	var held *HeldError
	switch {
	case errors.As(err, &held):
		return sandboxRefusal(http.StatusConflict, httpkit.KindAlreadyExists, op, name, held.Error())
	case errors.Is(err, fs.ErrExist):
		return sandboxExists(name)
	case errors.Is(err, fs.ErrNotExist):
		return unknownSandbox(selectPath, name)
	case errors.Is(err, unix.EBUSY): // a parent of forks
		return &httpkit.FileError{Kind: httpkit.KindInvalidTarget, Status: http.StatusConflict, Op: op, Path: name, Msg: err.Error(), Errno: unix.EBUSY}
	case errors.Is(err, fs.ErrPermission):
		return sandboxRefusal(http.StatusForbidden, httpkit.KindPermissionDenied, op, name,
			"sandbox "+httpkit.QuoteIfBad(name)+" is not one the daemon made at run time (the default, or a --sandbox): it stays while the daemon runs")
	}
	return err
}

func sandboxExists(name string) error {
	return sandboxRefusal(http.StatusConflict, httpkit.KindAlreadyExists, "create", name, "sandbox "+name+" exists")
}

// sandboxRefusal is a refusal naming the sandbox name as its path (when
// the name is UTF-8: httpkit/names.go).
func sandboxRefusal(status int, k httpkit.Kind, op, name, msg string) error {
	if !utf8.ValidString(name) {
		name = ""
	}
	return &httpkit.FileError{Kind: k, Status: status, Op: op, Path: name, Msg: msg}
}

// decodeStrict is httpkit.DecodeJSON that also refuses a field v does not have.
func decodeStrict(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	var raw json.RawMessage
	if err := httpkit.DecodeJSON(w, r, limit, &raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	var ute *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ute):
		return httpkit.PlainJSONError(&httpkit.JSONFailure{What: httpkit.JSONFieldType, Field: ute.Field, Type: ute.Type, Value: ute.Value})
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return httpkit.InvalidRequest("request body: unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return httpkit.InvalidRequest("request body: %v", err)
}
