package aio

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"sandfs/core"
	"sandfs/core/changes"
	"sandfs/rest/httpkit"
)

// The unit tests of the family call its helpers directly, on a Family whose
// host serves one sandbox, "default", on a temp dir. The route tests, which
// need the whole server, are rest's.

// testHost is an httpkit.Host of one sandbox and no streams.
type testHost struct{ sb *core.Sandbox }

func (h testHost) Limits() httpkit.Limits {
	return httpkit.Limits{MaxJSONBody: 64 << 20, MaxTarBody: 4 << 30}
}

func (h testHost) SandboxOf(context.Context) *core.Sandbox { return h.sb }

func (h testHost) SandboxValue(context.Context, any, func() any) any { return nil }

func (h testHost) StreamContext(parent context.Context) (context.Context, func()) {
	return context.WithCancel(parent)
}

func (h testHost) EndReason(context.Context) string { return "" }

func (h testHost) ForkOf(context.Context) (changes.Fork, bool) { return changes.Fork{}, false }

// newTestFamily is the family on a new sandbox "default"; root is the
// sandbox's host directory.
func newTestFamily(t testing.TB) (s *Family, root string) {
	t.Helper()
	root = t.TempDir()
	sb, err := core.Open("default", root, core.Options{})
	if err != nil {
		t.Fatalf("core.Open: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	return New(testHost{sb}), root
}

// localRequest is a request as a loopback client sends it.
func localRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = "127.0.0.1"
	return r
}

// asUID makes the daemon look as if it ran as uid for the test's duration.
func asUID(t *testing.T, uid int) {
	t.Helper()
	old := ProcessEUID
	ProcessEUID = func() int { return uid }
	t.Cleanup(func() { ProcessEUID = old })
}
