package rest

import (
	"net/url"
	"strings"
	"testing"

	"sandfs/api"
	"sandfs/rest/aio"
)

// tokenHarness serves default, a and b; a and b have their own tokens.
func newTokenHarness(t *testing.T) *regHarness {
	return newRegHarness(t, regOpts{Token: "daemon-tok", Tokens: map[string]string{"a": "tok-a", "b": "tok-b"}})
}

// sandboxRequest is a request of route rt acting on sandbox name (the
// path's {name}, or the selector), with the token in the header or the
// query, and no body: a route that gets past auth refuses it (400, 404,
// 415, 422) without touching the disk.
func sandboxRequest(rt Route, name, token string, inQuery, viaQuery bool) req {
	p := strings.NewReplacer(":name", name, ":id", "w_0").Replace(rt.Path)
	q := url.Values{}
	h := map[string]string{}
	if routeSelector(rt) == selectImplicit && name != "" {
		if viaQuery {
			q.Set("sandbox", name)
		} else {
			h["X-Sandfs-Sandbox"] = name
		}
	}
	if inQuery {
		q.Set("access_token", token)
	} else {
		h["Authorization"] = "Bearer " + token
	}
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return req{Method: rt.Method, Target: p, Header: h, NoAuth: true}
}

// TestSandboxTokenScope, from the route table: on every route that acts on
// a sandbox, sandbox a's token on sandbox b (or on one not served) is 403
// in the family's shape and changes nothing; on a, and with no selector,
// it passes auth. On the daemon-wide routes it is 403, except GET
// /v1/sandboxes (a alone) and /openapi.json; the daemon's token opens
// everything.
func TestSandboxTokenScope(t *testing.T) {
	rh := newTokenHarness(t)
	before := map[string]map[string]string{}
	for name, root := range rh.roots {
		before[name] = snapshot(t, root)
	}
	refused := func(t *testing.T, rt Route, r resp) {
		t.Helper()
		if rt.Method == "HEAD" {
			wantStatus(t, r, 403)
			return
		}
		wantFamilyError(t, rt.Family, r, 403, "permission_denied", "permission_denied")
		if !strings.Contains(string(r.Body), "this token opens one sandbox only") {
			t.Errorf("body %s: want the scope's message", r.Body)
		}
	}
	passes := func(t *testing.T, r resp) {
		t.Helper()
		if r.Status == 401 || r.Status == 403 {
			t.Errorf("status %d, want the route to run (body %s)", r.Status, r.Body)
		}
	}
	n := 0
	for _, rt := range rh.srv.Routes() {
		if !rt.Auth {
			continue
		}
		sel := routeSelector(rt)
		t.Run(rt.Method+" "+rt.Path, func(t *testing.T) {
			if sel == selectNone {
				r := rh.do(t, sandboxRequest(rt, "a", "tok-a", false, false))
				if sandboxTokenRoute(rt) {
					passes(t, r)
				} else {
					refused(t, rt, r)
				}
				passes(t, rh.do(t, sandboxRequest(rt, "a", "daemon-tok", false, false)))
				return
			}
			n++
			query := rt.Method == "GET" || rt.Method == "HEAD"
			for _, other := range []string{"b", "default", "zz"} {
				refused(t, rt, rh.do(t, sandboxRequest(rt, other, "tok-a", false, false)))
				if query {
					refused(t, rt, rh.do(t, sandboxRequest(rt, other, "tok-a", true, false)))
				}
				if sel == selectImplicit {
					refused(t, rt, rh.do(t, sandboxRequest(rt, other, "tok-a", false, true)))
				}
			}
			if daemonTokenRoute(rt) {
				// It acts on another sandbox too: its own token is refused.
				refused(t, rt, rh.do(t, sandboxRequest(rt, "a", "tok-a", false, false)))
			} else {
				passes(t, rh.do(t, sandboxRequest(rt, "a", "tok-a", false, false)))
				passes(t, rh.do(t, sandboxRequest(rt, "b", "tok-b", false, false)))
			}
			passes(t, rh.do(t, sandboxRequest(rt, "b", "daemon-tok", false, false)))
			if query {
				passes(t, rh.do(t, sandboxRequest(rt, "a", "tok-a", true, false)))
			}
			if sel == selectImplicit {
				passes(t, rh.do(t, sandboxRequest(rt, "", "tok-a", false, false)))
				passes(t, rh.do(t, sandboxRequest(rt, "a", "tok-a", false, true)))
			}
			r := rh.do(t, sandboxRequest(rt, "a", "tok-nope", false, false))
			if r.Status != 401 {
				t.Errorf("a wrong token: status %d, want 401", r.Status)
			}
		})
	}
	if n < 80 {
		t.Errorf("only %d routes act on a sandbox, want every agent, AIO and named route", n)
	}
	for name, root := range rh.roots {
		if d := snapshotDiff(before[name], snapshot(t, root)); d != "" {
			t.Errorf("sandbox %s changed:\n%s", name, d)
		}
	}
}

// TestSandboxTokenActs: a sandbox token acts on its own sandbox where the
// request names none, lists only it, and cannot make, change or remove
// sandboxes.
func TestSandboxTokenActs(t *testing.T) {
	rh := newTokenHarness(t)
	a := map[string]string{"Authorization": "Bearer tok-a"}
	r := rh.do(t, req{Method: "GET", Target: "/v1/fs/file?path=/who", Header: a, NoAuth: true})
	wantStatus(t, r, 200)
	if string(r.Body) != "a" {
		t.Errorf("implicit read with a's token: got %q, want a", r.Body)
	}
	w := rh.do(t, req{Method: "POST", Target: "/v2/fs/write", Body: jsonBody(`{"path":"/mine","content":"by a"}`), Header: a, NoAuth: true})
	wantAIO[aio.FileWriteResult](t, w)
	rh.wantOnDisk(t, "a", "mine", "by a")
	rh.wantNotOnDisk(t, "default", "mine")
	if got := wantAIO[aio.FileReadResult](t, rh.do(t, req{Method: "GET", Target: "/v2/fs/read?path=/who", NoAuth: true,
		Header: map[string]string{"X-API-Key": "tok-b"}})).Content; got != "b" {
		t.Errorf("implicit read with b's X-API-Key: got %q, want b", got)
	}
	if got := wantAIO[aio.FileReadResult](t, rh.do(t, req{Method: "GET", Target: "/v2/fs/read?path=/who", NoAuth: true,
		Header: map[string]string{"Authorization": "Bearer daemon-tok"}})).Content; got != "default" {
		t.Errorf("implicit read with the daemon's token: got %q, want default", got)
	}
	for _, prefix := range sandboxesPrefixes {
		l := decode[api.SandboxList](t, rh.do(t, req{Method: "GET", Target: prefix, Header: a, NoAuth: true}))
		if l.Count != 1 || len(l.Sandboxes) != 1 || l.Sandboxes[0].Name != "a" {
			t.Errorf("GET %s with a's token: got %+v, want a alone", prefix, l)
		}
		l = decode[api.SandboxList](t, rh.do(t, req{Method: "GET", Target: prefix + "?access_token=tok-b", NoAuth: true}))
		if l.Count != 1 || l.Sandboxes[0].Name != "b" {
			t.Errorf("GET %s with b's access_token: got %+v, want b alone", prefix, l)
		}
		if l := decode[api.SandboxList](t, rh.do(t, req{Method: "GET", Target: prefix, Header: map[string]string{"X-API-Key": "daemon-tok"}, NoAuth: true})); l.Count != 3 {
			t.Errorf("GET %s with the daemon's token: got %+v, want 3", prefix, l)
		}
		for _, c := range []struct{ method, target, body string }{
			{"POST", prefix, `{"name":"x"}`},
			{"PATCH", prefix + "/a", `{"quota":{"bytes":1}}`},
			{"DELETE", prefix + "/a", ""},
		} {
			rq := req{Method: c.method, Target: c.target, Header: a, NoAuth: true}
			if c.body != "" {
				rq.Body = jsonBody(c.body)
			}
			wantNamedError(t, rh.do(t, rq), 403, "EACCES", "")
		}
	}
	wantProblem(t, rh.do(t, req{Method: "GET", Target: "/metrics", Header: a, NoAuth: true}), 403, "permission_denied")
	wantStatus(t, rh.do(t, req{Method: "GET", Target: "/openapi.json", Header: a, NoAuth: true}), 200)
	// A selector that disagrees with itself is a 400 once the token is
	// valid, and the token's 401 before.
	wantStatus(t, rh.do(t, req{Method: "GET", Target: "/v2/fs/read?path=/who&sandbox=b", NoAuth: true,
		Header: map[string]string{"X-Sandfs-Sandbox": "a", "Authorization": "Bearer daemon-tok"}}), 400)
	wantStatus(t, rh.do(t, req{Method: "GET", Target: "/v2/fs/read?path=/who&sandbox=b", NoAuth: true,
		Header: map[string]string{"X-Sandfs-Sandbox": "a"}}), 401)
	// A removed sandbox's token opens nothing any more.
	if rh.reg.Remove(t.Context(), "b") == nil {
		t.Fatal("Remove(b): nil")
	}
	wantStatus(t, rh.do(t, req{Method: "GET", Target: "/v2/fs/read?path=/who", NoAuth: true, Header: map[string]string{"X-API-Key": "tok-b"}}), 401)
}

// TestRegistryTokenTaken: two sandboxes cannot share a token.
func TestRegistryTokenTaken(t *testing.T) {
	rh := newTokenHarness(t)
	if err := rh.reg.Add("c", rh.reg.Get("a"), "tok-a"); err == nil {
		t.Fatal("Add with a's token: nil error")
	}
	if rh.reg.Get("c") != nil {
		t.Error("c served after a refused Add")
	}
}
