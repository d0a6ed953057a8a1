package rest

import (
	"context"
	"net/http"
	"net/url"
	"strings"
)

// The AIO family's request helpers: required body fields, aliases,
// defaults, the owner of what a request creates. The query helpers are
// params.go's, in aioDialect.

// missing is the 422 of a required body field that is absent.
func missing(field string) error {
	return invalidField("body."+field, "missing", "Field required")
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

// ownerCtx stamps the request's owner (?user= on both versions, or the
// body's user field) on ctx; see aio_user.go.
func ownerCtx(r *http.Request, q url.Values, bodyUser *string) (context.Context, error) {
	u := q.Get("user")
	if bodyUser != nil && *bodyUser != "" {
		u = *bodyUser
	}
	return withOwner(r.Context(), u)
}

// isV1 tells the two dialects apart in a handler both serve.
func isV1(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v1/") }
