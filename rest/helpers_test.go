package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/core"
	"sandfs/internal/testenv"
	"sandfs/rest/agentfs"
)

// The test helpers of package rest, shared by its test files: the harness
// (a Server on a temp root, requests through its handler), the assertions
// on each family's answers, and the small fixtures several files build on.

// harness is a real daemon on loopback: a core.Sandbox on a temp dir, the
// Server's handler behind httptest.NewServer.
type harness struct {
	root  string // host directory of sandbox "default"
	srv   *Server
	ts    *httptest.Server
	token string
	logs  *testenv.Buffer
	// served is signalled each time a request's handler returns, for tests
	// that must wait for a handler whose client has gone.
	served chan struct{}
}

type harnessOpts struct {
	Token  string
	Limits Limits
	Root   string // host directory of sandbox "default" (default: a new t.TempDir())

	AllowOrigins, AllowHosts []string // browser.go

	MirrorOps   func(sandbox string) map[string]uint64        // metrics.go
	MirrorURing func(sandbox string) (uint64, bool)           // metrics.go
	Events      func(sandbox string) (EventsStats, bool)      // metrics_events.go
	Replication func(sandbox string) (ReplicationStats, bool) // metrics_replication.go

	State bool // sandbox "default" keeps state (checkpoints) in a temp dir
}

func newHarness(t testing.TB, o harnessOpts) *harness {
	t.Helper()
	root := o.Root
	if root == "" {
		root = t.TempDir()
	}
	var opts core.Options
	if o.State {
		opts.StateDir = t.TempDir()
	}
	sb, err := core.Open("default", root, opts)
	if err != nil {
		t.Fatalf("core.Open: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	h := &harness{root: root, token: o.Token, logs: &testenv.Buffer{}, served: make(chan struct{}, 64)}
	h.srv, err = New(Config{
		Sandboxes: map[string]*core.Sandbox{"default": sb},
		Token:     o.Token,
		Limits:    o.Limits,
		Log:       slog.New(slog.NewTextHandler(h.logs, nil)),

		AllowOrigins: o.AllowOrigins,
		AllowHosts:   o.AllowHosts,
		MirrorOps:    o.MirrorOps,
		MirrorURing:  o.MirrorURing,
		Events:       o.Events,
		Replication:  o.Replication,
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	handler := h.srv.Handler()
	h.ts = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			select {
			case h.served <- struct{}{}:
			default:
			}
		}()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(h.ts.Close)
	t.Cleanup(func() {
		if t.Failed() && h.logs.Len() > 0 {
			t.Logf("server log:\n%s", h.logs.String())
		}
	})
	return h
}

// localRequest is httptest.NewRequest addressed to 127.0.0.1, a Host the
// browser guard accepts (httptest's default, example.com, is refused 421).
func localRequest(method, target string, body io.Reader) *http.Request {
	r := httptest.NewRequest(method, target, body)
	r.Host = "127.0.0.1"
	return r
}

// req is one request; Token "" sends the harness token as a Bearer header.
type req struct {
	Method string
	Target string // path and query
	Body   io.Reader
	Header map[string]string
	NoAuth bool   // send no token at all
	Host   string // the Host header, when not the server's address
}

type resp struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends r and returns the answer, after checking it against the OpenAPI
// document for its route and status.
func (h *harness) do(t *testing.T, r req) resp {
	t.Helper()
	hr, err := http.NewRequest(r.Method, h.ts.URL+r.Target, r.Body)
	if err != nil {
		t.Fatalf("NewRequest: %v", err)
	}
	if h.token != "" && !r.NoAuth {
		hr.Header.Set("Authorization", "Bearer "+h.token)
	}
	if r.Body != nil {
		// Every JSON route wants it (browser.go); a test that means to
		// send another type, or none (""), says so in r.Header.
		hr.Header.Set("Content-Type", "application/json")
	}
	for k, v := range r.Header {
		hr.Header.Set(k, v)
	}
	if r.Host != "" {
		hr.Host = r.Host
	}
	res, err := h.ts.Client().Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.Target, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", r.Method, r.Target, err)
	}
	out := resp{Status: res.StatusCode, Header: res.Header, Body: body}
	checkAgainstOpenAPI(t, h.srv.Routes(), r.Method, hr.URL.Path, out)
	checkNoHostPath(t, h.root, out)
	return out
}

// checkNoHostPath fails when an answer names the host directory of the root.
func checkNoHostPath(t *testing.T, root string, r resp) {
	t.Helper()
	if bytes.Contains(r.Body, []byte(root)) {
		t.Errorf("answer carries the host path %q: %s", root, r.Body)
	}
}

// problem decodes a problem+json answer and checks its shape against the
// status and the sandbox-agent type wanted.
func wantProblem(t *testing.T, r resp, status int, typ string) agentfs.Problem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status: got %d, want %d (body %s)", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type: got %q, want application/problem+json", ct)
	}
	var p agentfs.Problem
	if err := json.Unmarshal(r.Body, &p); err != nil {
		t.Fatalf("problem body %q: %v", r.Body, err)
	}
	titles := map[string]string{
		"invalid_request": "Invalid Request", "not_found": "Not Found", "conflict": "Conflict",
		"permission_denied": "Permission Denied", "stream_error": "Stream Error",
		"unsupported_media_type": "Unsupported Media Type", "token_invalid": "Token Invalid",
	}
	if got, want := p.Type, "urn:sandbox-agent:error:"+typ; got != want {
		t.Errorf("problem type: got %q, want %q", got, want)
	}
	if got, want := p.Title, titles[typ]; got != want {
		t.Errorf("problem title: got %q, want %q", got, want)
	}
	if p.Status != status {
		t.Errorf("problem status: got %d, want %d", p.Status, status)
	}
	if p.Detail == "" {
		t.Errorf("problem detail is empty")
	}
	for _, bad := range []string{"goroutine ", "panic", ".go:"} {
		if strings.Contains(p.Detail, bad) {
			t.Errorf("problem detail %q carries %q", p.Detail, bad)
		}
	}
	return p
}

func wantStatus(t *testing.T, r resp, status int) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status: got %d, want %d (body %s)", r.Status, status, r.Body)
	}
}

func decode[T any](t *testing.T, r resp) T {
	t.Helper()
	var v T
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	if err := json.Unmarshal(r.Body, &v); err != nil {
		t.Fatalf("decoding %T from %q: %v", v, r.Body, err)
	}
	return v
}

// Disk helpers: they act on the host root directly, as the fixtures and the
// checks of what a request did.

func (h *harness) host(p string) string { return filepath.Join(h.root, filepath.FromSlash(p)) }

func (h *harness) writeFile(t testing.TB, p, content string) {
	t.Helper()
	hp := h.host(p)
	if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) mkdir(t testing.TB, p string) {
	t.Helper()
	if err := os.MkdirAll(h.host(p), 0o755); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) symlink(t testing.TB, target, p string) {
	t.Helper()
	if err := os.Symlink(target, h.host(p)); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) wantFile(t *testing.T, p, content string) {
	t.Helper()
	b, err := os.ReadFile(h.host(p))
	if err != nil {
		t.Errorf("disk: %s: %v", p, err)
		return
	}
	if string(b) != content {
		t.Errorf("disk: %s: got %q, want %q", p, b, content)
	}
}

func (h *harness) wantDir(t *testing.T, p string) {
	t.Helper()
	fi, err := os.Lstat(h.host(p))
	if err != nil || !fi.IsDir() {
		t.Errorf("disk: %s: want a directory (err %v)", p, err)
	}
}

func (h *harness) wantAbsent(t *testing.T, p string) {
	t.Helper()
	if _, err := os.Lstat(h.host(p)); !os.IsNotExist(err) {
		t.Errorf("disk: %s: want absent, got err %v", p, err)
	}
}

// tree lists every path under the root (relative, sorted by the walk), for
// "nothing changed on disk" checks.
func (h *harness) tree(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(h.root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(h.root, p)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out = append(out, fmt.Sprintf("%s %v %d", rel, fi.Mode(), fi.Size()))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (h *harness) wantTree(t *testing.T, before []string) {
	t.Helper()
	after := h.tree(t)
	if strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Errorf("disk changed:\nbefore:\n%s\nafter:\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
}

func containsStr(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
