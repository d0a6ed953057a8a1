package aio

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"sandfs/rest/httpkit"
)

// The AIO family's request helpers: required body fields, aliases,
// defaults, the owner of what a request creates. The query helpers are
// params.go's, in httpkit.AIODialect.

// missing is the 422 of a required body field that is absent.
func missing(field string) error {
	return httpkit.InvalidField("body."+field, "missing", "Field required")
}

// pick returns the first non-nil of the given fields (a field and its
// alias), or nil.
func pick(ps ...*string) *string {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func strOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

// aioPathQuery is the start of a v2 route that reads its query: the query
// and its required parameter path.
func aioPathQuery(r *http.Request) (url.Values, string, error) {
	q, err := httpkit.Query(r)
	if err != nil {
		return nil, "", err
	}
	p, err := httpkit.RequiredQuery(q, "path", httpkit.AIODialect)
	return q, p, err
}

// pathBody is the start of a route whose body is a pathRequest: the body,
// and its required path (or its alias file).
func (s *Family) pathBody(w http.ResponseWriter, r *http.Request) (pathRequest, string, error) {
	var req pathRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return req, "", err
	}
	p := pick(req.Path, req.File)
	if p == nil {
		return req, "", missing("path")
	}
	return req, *p, nil
}

// ownerCtx stamps the request's owner (?user= on both versions, or the
// body's user field) on the request's context (user.go); an owner that
// cannot be resolved is a failure of the operation op.
func ownerCtx(r *http.Request, op string, bodyUser *string) (context.Context, error) {
	q, err := httpkit.Query(r)
	if err != nil {
		return nil, err
	}
	u := q.Get("user")
	if bodyUser != nil && *bodyUser != "" {
		u = *bodyUser
	}
	ctx, err := withOwner(r.Context(), u)
	if err != nil {
		return nil, httpkit.WithOp(op, err)
	}
	return ctx, nil
}

// isV1 tells the two dialects apart in a handler both serve.
func isV1(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v1/") }
