package rest

import (
	"net/url"
	"strings"
	"testing"
)

// TestAuth generates its cases from the route table: every route that needs
// the token refuses a missing or wrong one with 401 token_invalid and takes
// each of the four forms (the two query forms on GET and HEAD only); the
// health routes need none.
func TestAuth(t *testing.T) {
	const token = "s3cret-tok"
	h := newHarness(t, harnessOpts{Token: token})
	h.writeFile(t, "/keep", "keep")
	before := h.tree(t)

	// Requests carry no path and no body: a route that gets past auth
	// refuses them (400/415) without touching the disk. A catch-all path
	// (sandboxd's /v1/files/*path) gets one that climbs out of the root,
	// which the route refuses (403).
	target := func(rt Route, q url.Values) string {
		p := rt.Path
		if before, _, ok := strings.Cut(p, "*"); ok {
			p = before + "..%2Fescape"
		}
		if len(q) == 0 {
			return p
		}
		return p + "?" + q.Encode()
	}
	refused := []struct {
		name   string
		header map[string]string
		query  url.Values
	}{
		{"no token", nil, nil},
		{"wrong bearer", map[string]string{"Authorization": "Bearer nope"}, nil},
		{"bearer prefix of the token", map[string]string{"Authorization": "Bearer s3cret"}, nil},
		{"token without scheme", map[string]string{"Authorization": token}, nil},
		{"basic scheme", map[string]string{"Authorization": "Basic " + token}, nil},
		{"wrong X-API-Key", map[string]string{"X-API-Key": "nope"}, nil},
		{"wrong access_token", nil, url.Values{"access_token": {"nope"}}},
		{"wrong api_key", nil, url.Values{"api_key": {"nope"}}},
		{"token in another parameter", nil, url.Values{"token": {token}}},
	}
	accepted := []struct {
		name   string
		header map[string]string
		query  url.Values
	}{
		{"bearer", map[string]string{"Authorization": "Bearer " + token}, nil},
		{"bearer, lower-case scheme", map[string]string{"Authorization": "bearer " + token}, nil},
		{"X-API-Key", map[string]string{"X-API-Key": token}, nil},
		{"access_token", nil, url.Values{"access_token": {token}}},
		{"api_key", nil, url.Values{"api_key": {token}}},
		{"one right form among wrong ones", map[string]string{"Authorization": "Bearer nope", "X-API-Key": token}, nil},
	}
	for _, rt := range h.srv.Routes() {
		t.Run(rt.Method+" "+rt.Path, func(t *testing.T) {
			if !rt.Auth {
				p, _, _ := strings.Cut(rt.Path, "*") // a catch-all's own root: GET /ui/*file at /ui/
				r := h.do(t, req{Method: rt.Method, Target: p, NoAuth: true})
				wantStatus(t, r, 200)
				return
			}
			for _, c := range refused {
				t.Run(c.name, func(t *testing.T) {
					r := h.do(t, req{Method: rt.Method, Target: target(rt, c.query), Header: c.header, NoAuth: true})
					if rt.Method == "HEAD" { // no body to check
						wantStatus(t, r, 401)
						return
					}
					wantFamilyError(t, rt.Family, r, 401, "token_invalid", "unauthorized")
					if got := r.Header.Get("WWW-Authenticate"); got == "" {
						t.Errorf("WWW-Authenticate: got none, want a Bearer challenge")
					}
				})
			}
			for _, c := range accepted {
				t.Run(c.name, func(t *testing.T) {
					r := h.do(t, req{Method: rt.Method, Target: target(rt, c.query), Header: c.header, NoAuth: true})
					if c.query != nil && rt.Method != "GET" && rt.Method != "HEAD" {
						// A query token is for EventSource and websockets:
						// a request that may change something needs a
						// header, which a form or an <img> cannot set.
						wantFamilyError(t, rt.Family, r, 401, "token_invalid", "unauthorized")
						return
					}
					if r.Status == 401 {
						t.Errorf("status: got 401, want the route to run (body %s)", r.Body)
					}
				})
			}
		})
	}
	h.wantTree(t, before)
}

// TestNoTokenNoAuth: without a token every route runs without credentials.
func TestNoTokenNoAuth(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, rt := range h.srv.Routes() {
		r := h.do(t, req{Method: rt.Method, Target: rt.Path})
		if r.Status == 401 {
			t.Errorf("%s %s: got 401 with no token configured", rt.Method, rt.Path)
		}
	}
}
