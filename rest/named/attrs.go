package named

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os/user"
	"strconv"
	"strings"

	"github.com/julienschmidt/httprouter"

	"sandfs/rest/httpkit"
)

// The named family's attribute routes: chmod and chown.

// namedChmod: POST /fs/chmod {path, mode "0755", workingDir, recursive}.
func (s *Family) namedChmod(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb := s.sandbox(r)
	var req ChmodRequest
	if err := httpkit.DecodeJSON(w, r, s.limits.MaxJSONBody, &req); err != nil {
		return err
	}
	if req.Mode == nil {
		return httpkit.InvalidRequest(`missing required field "mode"`)
	}
	mode, err := parseMode("mode", *req.Mode)
	if err != nil {
		return err
	}
	p, err := namedPath(sb, req.WorkingDir, deref(req.Path), req.Path != nil)
	if err != nil {
		return err
	}
	res, err := sb.Chmod(r.Context(), p, mode, req.Recursive)
	if err != nil {
		return err
	}
	return httpkit.WriteJSON(w, http.StatusOK, ChmodResponse{Path: res.Path, Mode: fmt.Sprintf("%04o", mode), Count: res.Count})
}

// namedChown: POST /fs/chown {path, uid, gid, workingDir, recursive}; uid
// and gid are numbers or names, at least one of them given.
func (s *Family) namedChown(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb := s.sandbox(r)
	var req ChownRequest
	if err := httpkit.DecodeJSON(w, r, s.limits.MaxJSONBody, &req); err != nil {
		return err
	}
	uid, err := ownerID("uid", req.Uid, func(n string) (string, error) {
		u, err := user.Lookup(n)
		if err != nil {
			return "", err
		}
		return u.Uid, nil
	})
	if err != nil {
		return err
	}
	gid, err := ownerID("gid", req.Gid, func(n string) (string, error) {
		g, err := user.LookupGroup(n)
		if err != nil {
			return "", err
		}
		return g.Gid, nil
	})
	if err != nil {
		return err
	}
	if uid < 0 && gid < 0 {
		return httpkit.InvalidRequest(`one of "uid" and "gid" is required`)
	}
	p, err := namedPath(sb, req.WorkingDir, deref(req.Path), req.Path != nil)
	if err != nil {
		return err
	}
	res, err := sb.Chown(r.Context(), p, uid, gid, req.Recursive)
	if err != nil {
		return err
	}
	return httpkit.WriteJSON(w, http.StatusOK, ChownResponse{Path: res.Path, Affected: res.Paths, Count: res.Count})
}

// ownerID reads a uid or gid given as a number, a numeric string or a name
// (looked up on the host); absent or null is -1.
func ownerID(field string, raw json.RawMessage, lookup func(string) (string, error)) (int, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return -1, nil
	}
	var n int64
	if err := json.Unmarshal(raw, &n); err == nil {
		if n < 0 || n > 1<<32-2 {
			return 0, httpkit.InvalidRequest("%s %d is out of range", field, n)
		}
		return int(n), nil
	}
	var name string
	if err := json.Unmarshal(raw, &name); err != nil || name == "" {
		return 0, httpkit.InvalidRequest("%s must be a number or a name", field)
	}
	if v, err := strconv.ParseUint(name, 10, 32); err == nil {
		return int(v), nil
	}
	id, err := lookup(name)
	if err != nil {
		return 0, httpkit.InvalidRequest("unknown %s %q", map[string]string{"uid": "user", "gid": "group"}[field], name)
	}
	v, err := strconv.Atoi(id)
	if err != nil {
		return 0, httpkit.InvalidRequest("%s %q has no numeric id", field, name)
	}
	return v, nil
}

// parseMode reads an octal mode ("0755", "755", "0o755").
func parseMode(field, v string) (uint32, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(v, "0o"), "0O")
	m, err := strconv.ParseUint(t, 8, 32)
	if err != nil || t == "" || m > 0o7777 {
		return 0, httpkit.InvalidRequest("%s must be an octal mode such as \"0644\", got %q", field, v)
	}
	return uint32(m), nil
}
