package aio

import (
	"context"
	"encoding/base64"
	"net/http"

	"github.com/julienschmidt/httprouter"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

// Extended attributes (api.md §4 xattr row, sandfs's own): values travel
// base64-encoded; every answer is the file's attributes after the call.
// A missing attribute is ENODATA, which the classifier makes not_found (404).

// xattrFS is what the xattr routes need from core.
type xattrFS interface {
	Xattrs(ctx context.Context, p, name string) (string, map[string][]byte, error)
	SetXattr(ctx context.Context, p, name string, value []byte) (string, error)
	RemoveXattr(ctx context.Context, p, name string) (string, error)
}

var _ xattrFS = (*core.Sandbox)(nil)

func (s *Family) xattrFS(ctx context.Context) xattrFS { return s.host.SandboxOf(ctx) }

// xattrSetRequest is the body of PUT /v2/fs/xattr.
type xattrSetRequest struct {
	Path  *string `json:"path"`
	Name  *string `json:"name"`
	Value *string `json:"value"` // base64 (standard, padded)
}

// xattrResult is {path, xattrs:{name: base64 value}}.
type xattrResult struct {
	Path   string            `json:"path"`
	Xattrs map[string]string `json:"xattrs"`
}

// xattrGet: GET /v2/fs/xattr?path&name — every attribute of the file, or
// just name (404 when missing).
func (s *Family) xattrGet(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	if _, ok := q["path"]; !ok {
		return httpkit.InvalidField("query.path", "missing", "Field required")
	}
	return s.writeXattrs(w, r, q.Get("path"), q.Get("name"))
}

// xattrSet: PUT /v2/fs/xattr {path, name, value} — set one attribute.
func (s *Family) xattrSet(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req xattrSetRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		v    *string
	}{{"path", req.Path}, {"name", req.Name}, {"value", req.Value}} {
		if f.v == nil {
			return httpkit.InvalidField("body."+f.name, "missing", "Field required")
		}
	}
	val, err := base64.StdEncoding.DecodeString(*req.Value)
	if err != nil {
		return httpkit.WithOp("xattr_set", httpkit.InvalidRequest("value is not base64: %v", err))
	}
	ap, err := s.xattrFS(r.Context()).SetXattr(r.Context(), *req.Path, *req.Name, val)
	if err != nil {
		return httpkit.WithOp("xattr_set", err)
	}
	return s.writeXattrs(w, r, ap, "")
}

// xattrDelete: DELETE /v2/fs/xattr?path&name — remove one attribute.
func (s *Family) xattrDelete(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	for _, k := range []string{"path", "name"} {
		if _, ok := q[k]; !ok {
			return httpkit.InvalidField("query."+k, "missing", "Field required")
		}
	}
	ap, err := s.xattrFS(r.Context()).RemoveXattr(r.Context(), q.Get("path"), q.Get("name"))
	if err != nil {
		return httpkit.WithOp("xattr_delete", err)
	}
	return s.writeXattrs(w, r, ap, "")
}

func (s *Family) writeXattrs(w http.ResponseWriter, r *http.Request, p, name string) error {
	ap, xs, err := s.xattrFS(r.Context()).Xattrs(r.Context(), p, name)
	if err != nil {
		return httpkit.WithOp("xattr_get", err)
	}
	out := xattrResult{Path: ap, Xattrs: make(map[string]string, len(xs))}
	for k, v := range xs {
		out.Xattrs[k] = base64.StdEncoding.EncodeToString(v)
	}
	return writeAIO(w, out)
}
