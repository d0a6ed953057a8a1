package rest

import (
	"strings"
	"testing"

	"sandfs/core"
)

func TestNewNeedsDefaultSandbox(t *testing.T) {
	_, err := New(Config{Sandboxes: map[string]*core.Sandbox{}})
	if err == nil {
		t.Fatalf("New without a default sandbox: got nil error, want one")
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	r := h.do(t, req{Method: "GET", Target: "/v1/fs/nope"})
	wantProblem(t, r, 404, "not_found")
	r = h.do(t, req{Method: "PATCH", Target: "/v1/fs/file?path=/x"})
	wantProblem(t, r, 405, "invalid_request")
	if got := r.Header.Get("Allow"); !strings.Contains(got, "GET") || !strings.Contains(got, "PUT") {
		t.Errorf("Allow: got %q, want GET and PUT", got)
	}
	h.wantAbsent(t, "/x")
}
