package rest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/journal"
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
	logs  *syncBuffer
	// served is signalled each time a request's handler returns, for tests
	// that must wait for a handler whose client has gone.
	served chan struct{}
}

type harnessOpts struct {
	Token  string
	Limits Limits
	Root   string // host directory of sandbox "default" (default: a new t.TempDir())

	AllowOrigins, AllowHosts []string // browser.go

	MirrorOps func(sandbox string) map[string]uint64   // metrics.go
	Events    func(sandbox string) (EventsStats, bool) // metrics_events.go

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
	h := &harness{root: root, token: o.Token, logs: &syncBuffer{}, served: make(chan struct{}, 64)}
	h.srv, err = New(Config{
		Sandboxes: map[string]*core.Sandbox{"default": sb},
		Token:     o.Token,
		Limits:    o.Limits,
		Log:       slog.New(slog.NewTextHandler(h.logs, nil)),

		AllowOrigins: o.AllowOrigins,
		AllowHosts:   o.AllowHosts,
		MirrorOps:    o.MirrorOps,
		Events:       o.Events,
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
func wantProblem(t *testing.T, r resp, status int, typ string) agentProblem {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status: got %d, want %d (body %s)", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
		t.Errorf("Content-Type: got %q, want application/problem+json", ct)
	}
	var p agentProblem
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

func (h *harness) writeFile(t *testing.T, p, content string) {
	t.Helper()
	hp := h.host(p)
	if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(hp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) mkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(h.host(p), 0o755); err != nil {
		t.Fatal(err)
	}
}

func (h *harness) symlink(t *testing.T, target, p string) {
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

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// Tests of the AIO transfer routes (part B): grep, search, upload,
// download, tree, xattr. Every answer goes through h.do, which checks it
// against openapi.json.

func jsonReq(method, target, body string) req {
	return req{Method: method, Target: target, Body: strings.NewReader(body), Header: map[string]string{"Content-Type": "application/json"}}
}

// multipartBody builds an upload form: fields in order, then the file.
func multipartBody(t *testing.T, fields [][2]string, filename string, content io.Reader) (io.Reader, string) {
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	go func() {
		for _, f := range fields {
			mw.WriteField(f[0], f[1])
		}
		if content != nil {
			fw, err := mw.CreateFormFile("file", filename)
			if err != nil {
				pw.CloseWithError(err)
				return
			}
			if _, err := io.Copy(fw, content); err != nil {
				pw.CloseWithError(err)
				return
			}
		}
		pw.CloseWithError(mw.Close())
	}()
	return pr, mw.FormDataContentType()
}

type zeroReader struct{}

func (zeroReader) Read(b []byte) (int, error) {
	clear(b)
	return len(b), nil
}

// newHarnessAt is newHarness on a given root directory.
func newHarnessAt(t *testing.T, root string) *harness {
	t.Helper()
	sb, err := core.Open("default", root, core.Options{})
	if err != nil {
		t.Fatalf("core.Open: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	h := &harness{root: root, logs: &syncBuffer{}, served: make(chan struct{}, 64)}
	h.srv, err = New(Config{Sandboxes: map[string]*core.Sandbox{"default": sb}, Log: slog.New(slog.NewTextHandler(h.logs, nil))})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.ts = httptest.NewServer(h.srv.Handler())
	t.Cleanup(h.ts.Close)
	return h
}

// Tests of the AIO file routes of part A: each route's success and each
// documented failure, envelope field by field, in both versions, disk state
// after; v1 answers validated against the 1.x schema (h.v1).

// newFilesHarness is the harness with small limits for the caps.
func newFilesHarness(t *testing.T, tweak func(*aioFileLimits)) *harness {
	t.Helper()
	h := newHarness(t, harnessOpts{})
	h.srv.fileState.limits = defaultAIOFileLimits
	if tweak != nil {
		tweak(&h.srv.fileState.limits)
	}
	return h
}

func (h *harness) get(t *testing.T, target string) resp {
	t.Helper()
	return h.do(t, req{Method: "GET", Target: target})
}

func (h *harness) post(t *testing.T, target, body string) resp {
	t.Helper()
	return h.do(t, req{Method: "POST", Target: target, Body: strings.NewReader(body)})
}

func jsonStr(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// AIO shape helpers, shared by the AIO family's tests.

// aioEnv is the AIO envelope as a test reads it.
type aioEnv[T any] struct {
	Success *bool   `json:"success"`
	Message *string `json:"message"`
	Data    T       `json:"data"`
	Hint    *string `json:"hint"`
}

// wantAIO checks a successful AIO answer and returns its data.
func wantAIO[T any](t *testing.T, r resp) T {
	t.Helper()
	if r.Status != 200 {
		t.Fatalf("status: got %d, want 200 (body %s)", r.Status, r.Body)
	}
	env := decode[aioEnv[T]](t, r)
	if env.Success == nil || !*env.Success {
		t.Fatalf("success: got %v, want true (body %s)", env.Success, r.Body)
	}
	if env.Message == nil || *env.Message != aioMessageOK {
		t.Errorf("message: got %v, want %q", env.Message, aioMessageOK)
	}
	if env.Hint != nil {
		t.Errorf("hint: got %q, want null", *env.Hint)
	}
	return env.Data
}

// wantAIOError checks a failed AIO answer: status, envelope, and the failure
// data's error_type; it returns the data for more checks.
func wantAIOError(t *testing.T, r resp, status int, errorType string) aioFailure {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status: got %d, want %d (body %s)", r.Status, status, r.Body)
	}
	env := decode[aioEnv[aioFailure]](t, r)
	if env.Success == nil || *env.Success {
		t.Errorf("success: got %v, want false", env.Success)
	}
	if env.Message == nil || *env.Message == "" {
		t.Errorf("message: got %v, want one", env.Message)
	}
	if got := env.Data.ErrorType; got != errorType {
		t.Errorf("data.error_type: got %q, want %q", got, errorType)
	}
	if env.Data.Message == "" {
		t.Errorf("data.message is empty")
	}
	for _, bad := range []string{"goroutine ", "panic", ".go:"} {
		if strings.Contains(string(r.Body), bad) {
			t.Errorf("body carries %q: %s", bad, r.Body)
		}
	}
	return env.Data
}

// wantValidation checks a 422 answer and its one error.
func wantValidation(t *testing.T, r resp, location, typ string) {
	t.Helper()
	if r.Status != 422 {
		t.Fatalf("status: got %d, want 422 (body %s)", r.Status, r.Body)
	}
	v := decode[aioValidation](t, r)
	if v.Success || v.Message == "" {
		t.Errorf("success/message: got %v %q, want false and a message", v.Success, v.Message)
	}
	if len(v.Errors) != 1 {
		t.Fatalf("errors: got %d, want 1: %s", len(v.Errors), r.Body)
	}
	if e := v.Errors[0]; e.Location != location || e.Type != typ || e.Message == "" {
		t.Errorf("errors[0]: got %+v, want location %q type %q and a message", e, location, typ)
	}
}

// wantFamilyError checks a failure in the shape of the route's family:
// problem+json of type agentType, or the AIO envelope with aioType.
func wantFamilyError(t *testing.T, family string, r resp, status int, agentType, aioType string) {
	t.Helper()
	switch family {
	case FamilyAIOv1, FamilyAIOv2:
		wantAIOError(t, r, status, aioType)
	case FamilyNamed:
		wantNamedError(t, r, status, "", "")
	default:
		wantProblem(t, r, status, agentType)
	}
}

// errnoData checks the errno fields of a failure.
func wantErrno(t *testing.T, f aioFailure, errno unix.Errno, exception string) {
	t.Helper()
	if f.Errno == nil || *f.Errno != int(errno) {
		t.Errorf("data.errno: got %v, want %d", f.Errno, int(errno))
	}
	if f.ErrnoName == nil || *f.ErrnoName != unix.ErrnoName(errno) {
		t.Errorf("data.errno_name: got %v, want %s", f.ErrnoName, unix.ErrnoName(errno))
	}
	if f.ExceptionType == nil || *f.ExceptionType != exception {
		t.Errorf("data.exception_type: got %v, want %s", f.ExceptionType, exception)
	}
}

// wantV1Failure checks a /v1/file expected failure: 200, success:false,
// error_type and errno.
func wantV1Failure(t *testing.T, r resp, errorType string, errno unix.Errno, exception string) aioFailure {
	t.Helper()
	f := wantAIOError(t, r, 200, errorType)
	if errno != 0 {
		wantErrno(t, f, errno, exception)
	}
	return f
}

// fixture lays out a small tree:
//
//	/a.txt        "abc"
//	/link         -> a.txt
//	/dirlink      -> sub
//	/dangling     -> nowhere
//	/sub/         dir
//	/sub/inner    "inner!"
func fixture(t *testing.T, h *harness) {
	t.Helper()
	h.writeFile(t, "/a.txt", "abc")
	h.writeFile(t, "/sub/inner", "inner!")
	h.symlink(t, "a.txt", "/link")
	h.symlink(t, "sub", "/dirlink")
	h.symlink(t, "nowhere", "/dangling")
}

// wantNoTemp fails when a .sandfs-* temp file is left in the host dir.
func wantNoTemp(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".sandfs-") {
			t.Errorf("temp file left behind: %s", e.Name())
		}
	}
}

// namedHarness is the harness with a second sandbox, "other", beside
// "default".
type namedHarness struct {
	*harness
	other   string // host root of "other"
	def, ob *core.Sandbox
}

func newNamedHarness(t *testing.T) *namedHarness {
	return newNamedHarnessWith(t, core.Options{})
}

// newNamedHarnessWith opens sandbox default with o.
func newNamedHarnessWith(t *testing.T, o core.Options) *namedHarness {
	t.Helper()
	root, other := t.TempDir(), t.TempDir()
	def, err := core.Open("default", root, o)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := core.Open("other", other, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { def.Close(); ob.Close() })
	h := &harness{root: root, logs: &syncBuffer{}, served: make(chan struct{}, 64)}
	h.srv, err = New(Config{
		Sandboxes: map[string]*core.Sandbox{"default": def, "other": ob},
		Log:       slog.New(slog.NewTextHandler(h.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.start(t)
	return &namedHarness{harness: h, other: other, def: def, ob: ob}
}

// start serves h.srv on a test server, and logs the server's log when the
// test fails.
func (h *harness) start(t *testing.T) {
	t.Helper()
	h.ts = httptest.NewServer(h.srv.Handler())
	t.Cleanup(h.ts.Close)
	t.Cleanup(func() {
		if t.Failed() && h.logs.Len() > 0 {
			t.Logf("server log:\n%s", h.logs.String())
		}
	})
}

// watching starts the kernel watch of sandbox default and waits until it
// is ready.
func (h *namedHarness) watching(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := h.def.StartWatching(ctx, nil); err != nil {
		t.Fatal(err)
	}
	<-h.def.WatchReady()
}

// wantNamedError checks a §5 error: status, code (when given) and path
// (when given), and that error is not empty.
func wantNamedError(t *testing.T, r resp, status int, code, path string) namedError {
	t.Helper()
	if r.Status != status {
		t.Errorf("status: got %d, want %d (body %s)", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	var e namedError
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	if e.Error == "" {
		t.Errorf("error: empty")
	}
	if !strings.HasPrefix(e.Code, "E") {
		t.Errorf("code: got %q, want an errno name", e.Code)
	}
	if code != "" && e.Code != code {
		t.Errorf("code: got %q, want %q (error %q)", e.Code, code, e.Error)
	}
	if path != "" && e.Path != path {
		t.Errorf("path: got %q, want %q", e.Path, path)
	}
	return e
}

func namedBody(v any) *bytes.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

var namedPrefixes = []string{"/v1/sandboxes/", "/v1/sprites/"}

// wsMsg is any message the watch socket sends.
type wsMsg struct {
	Type      string   `json:"type"`
	Paths     []string `json:"paths"`
	Path      string   `json:"path"`
	Event     string   `json:"event"`
	Timestamp string   `json:"timestamp"`
	IsDir     bool     `json:"isDir"`
	Size      int64    `json:"size"`
	Message   string   `json:"message"`
	Seq       uint64   `json:"seq"`
}

func (h *namedHarness) dialWatch(t *testing.T, target string, client *http.Client) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.ts.URL, "http")+target, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", target, err, res)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func wsSend(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func wsRecv(t *testing.T, c *websocket.Conn, within time.Duration) wsMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if typ != websocket.MessageText {
		t.Fatalf("message type %v, want text", typ)
	}
	var m wsMsg
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("message %q: %v", b, err)
	}
	return m
}

// newWatchHarness is the harness with the kernel watch of the root running,
// ready before the test starts.
func newWatchHarness(t *testing.T) (*harness, *core.Sandbox) {
	t.Helper()
	h := newHarness(t, harnessOpts{})
	sb := h.srv.reg.Get("default")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // runs before the harness's own cleanups
	if err := sb.StartWatching(ctx, slog.New(slog.NewTextHandler(h.logs, nil))); err != nil {
		t.Fatalf("StartWatching: %v", err)
	}
	select {
	case <-sb.WatchReady():
	case <-time.After(10 * time.Second):
		t.Fatal("kernel watch not ready after 10 s")
	}
	return h, sb
}

func jsonBody(s string) io.Reader { return strings.NewReader(s) }

// settleOutside waits until the kernel watch has told every change made
// directly in the root so far: it makes one more (empty) file there and
// waits for its create, which inotify queues after them.
func settleOutside(t *testing.T, h *harness, sb *core.Sandbox) {
	t.Helper()
	seq := sb.Journal().Seq()
	name := "/.settle-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	h.writeFile(t, name, "")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		evs, _ := sb.Journal().Since(seq, journal.RingSize)
		for _, e := range evs {
			if e.Path == name {
				return
			}
		}
	}
	t.Fatalf("the kernel watch did not tell %s in 10 s", name)
}

// create makes a watcher through the v2 route and returns its data.
func (h *harness) createWatch(t *testing.T, body string) watchCreated {
	t.Helper()
	return wantAIO[watchCreated](t, h.do(t, req{Method: "POST", Target: "/v2/watch", Body: jsonBody(body)}))
}

func (h *harness) pollWatch(t *testing.T, id string, cursor uint64, timeout int) watchBatch {
	t.Helper()
	r := h.do(t, req{Method: "GET", Target: fmt.Sprintf("/v2/watch/%s/poll?cursor=%d&timeout=%d", id, cursor, timeout)})
	return wantAIO[watchBatch](t, r)
}

// collect polls from cursor until done says the events suffice (or 10 s
// pass), then polls once more for settle seconds to catch any extra event.
func (h *harness) collect(t *testing.T, id string, cursor uint64, done func([]watchEvent) bool, settle int) ([]watchEvent, uint64) {
	t.Helper()
	var got []watchEvent
	deadline := time.Now().Add(10 * time.Second)
	for !done(got) && time.Now().Before(deadline) {
		b := h.pollWatch(t, id, cursor, 1)
		got = append(got, b.Events...)
		cursor = b.Cursor
	}
	if settle > 0 {
		b := h.pollWatch(t, id, cursor, settle)
		got = append(got, b.Events...)
		cursor = b.Cursor
	}
	return got, cursor
}

func evString(e watchEvent) string {
	return wantEv{e.Type, e.Path, e.RelativePath, e.OldPath, e.Origin, e.IsDir}.String()
}

func decodeJSONString[T any](t *testing.T, s string) T {
	t.Helper()
	var v T
	dec := jsonDecoder(s)
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decoding %q: %v", s, err)
	}
	return v
}

func jsonDecoder(s string) *json.Decoder {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	return dec
}

// checkFamilyShape checks that an error answer is in the family's shape.
func checkFamilyShape(family string, r resp) error {
	for _, bad := range []string{"goroutine ", "panic", ".go:"} {
		if bytes.Contains(r.Body, []byte(bad)) {
			return fmt.Errorf("body carries %q", bad)
		}
	}
	switch family {
	case FamilyAIOv1, FamilyAIOv2:
		var env struct {
			Success *bool           `json:"success"`
			Message string          `json:"message"`
			Data    json.RawMessage `json:"data"`
			Errors  []fieldError    `json:"errors"`
		}
		if err := json.Unmarshal(r.Body, &env); err != nil {
			return fmt.Errorf("not an AIO envelope: %v", err)
		}
		if env.Success == nil || *env.Success || env.Message == "" {
			return fmt.Errorf("envelope: want success:false and a message")
		}
		if r.Status == 422 {
			if len(env.Errors) == 0 || env.Errors[0].Location == "" || env.Errors[0].Type == "" {
				return fmt.Errorf("422 without errors[{location,type,message}]")
			}
			return nil
		}
		var f aioFailure
		if err := json.Unmarshal(env.Data, &f); err != nil || f.ErrorType == "" || f.Message == "" {
			return fmt.Errorf("data: want {error_type, message, …}, got %s", env.Data)
		}
		if family == FamilyAIOv1 && r.Status == 200 && f.Errno == nil && f.ErrorType != string(kindDecode) && f.ErrorType != string(kindTooLarge) {
			return fmt.Errorf("200 success:false without an errno: only filesystem failures answer 200 on /v1/file")
		}
	case FamilyNamed:
		var e namedError
		if ct := r.Header.Get("Content-Type"); ct != "application/json" {
			return fmt.Errorf("Content-Type %q", ct)
		}
		if err := json.Unmarshal(r.Body, &e); err != nil || e.Error == "" || !strings.HasPrefix(e.Code, "E") {
			return fmt.Errorf("want {error, code: E…, path}: %v", err)
		}
	default:
		var p agentProblem
		if ct := r.Header.Get("Content-Type"); ct != "application/problem+json" {
			return fmt.Errorf("Content-Type %q", ct)
		}
		if err := json.Unmarshal(r.Body, &p); err != nil || !strings.HasPrefix(p.Type, "urn:sandbox-agent:error:") || p.Status != r.Status || p.Detail == "" || p.Title == "" {
			return fmt.Errorf("want problem+json {type, title, status, detail}: %v", err)
		}
	}
	return nil
}

// snapshot names every entry under dir with its mode, size, content hash,
// link target and extended attributes.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		rel, _ := filepath.Rel(dir, p)
		if err == nil {
			var fi os.FileInfo
			if fi, err = d.Info(); err == nil {
				out[rel] = describe(p, fi)
				return nil
			}
		}
		if errors.Is(err, unix.ENAMETOOLONG) {
			// A tree deeper than the host can name: it exists, which is
			// what a case must be told of.
			out[rel] = "(host path too long)"
			return filepath.SkipDir
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func describe(p string, fi os.FileInfo) string {
	{
		desc := fmt.Sprintf("%v %d", fi.Mode(), fi.Size())
		switch {
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return "unreadable: " + err.Error()
			}
			sum := sha256.Sum256(b)
			desc += " " + hex.EncodeToString(sum[:8])
		case fi.Mode()&os.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			desc += " -> " + l
		}
		buf := make([]byte, 4096)
		if n, err := unix.Llistxattr(p, buf); err == nil && n > 0 {
			desc += " xattrs " + strings.ReplaceAll(string(buf[:n]), "\x00", ",")
		}
		return desc
	}
}

func snapshotDiff(before, after map[string]string) string {
	var d []string
	for k, v := range before {
		if w, ok := after[k]; !ok {
			d = append(d, "- "+k+" "+v)
		} else if w != v {
			d = append(d, "~ "+k+" "+v+" => "+w)
		}
	}
	for k, v := range after {
		if _, ok := before[k]; !ok {
			d = append(d, "+ "+k+" "+v)
		}
	}
	sort.Strings(d)
	if len(d) > 12 {
		d = append(d[:12], fmt.Sprintf("… and %d more", len(d)-12))
	}
	return strings.Join(d, "\n")
}

// wantGuardRefusal checks a refusal: status, the family's shape, and its
// kind (AIO error_type, sandbox-agent type, named code).
func wantGuardRefusal(t *testing.T, family string, r resp, status int, k kind) {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d: %s", r.Status, status, r.Body)
	}
	if err := checkFamilyShape(family, r); err != nil {
		t.Fatalf("shape: %v: %s", err, r.Body)
	}
	switch family {
	case FamilyAIOv1, FamilyAIOv2:
		var env struct{ Data aioFailure }
		json.Unmarshal(r.Body, &env)
		if env.Data.ErrorType != string(k) {
			t.Errorf("error_type %q, want %q", env.Data.ErrorType, k)
		}
	case FamilyNamed:
		var e namedError
		json.Unmarshal(r.Body, &e)
		want := map[int]string{403: "EACCES", 421: "EACCES", 415: "EINVAL", 431: "E2BIG", 400: "EINVAL"}[status]
		if e.Code != want {
			t.Errorf("code %q, want %q", e.Code, want)
		}
	default:
		var p agentProblem
		json.Unmarshal(r.Body, &p)
		want := map[int]string{403: "permission_denied", 421: "permission_denied", 415: "unsupported_media_type", 431: "invalid_request", 400: "invalid_request"}[status]
		if p.Type != "urn:sandbox-agent:error:"+want {
			t.Errorf("type %q, want %s", p.Type, want)
		}
	}
}

// asUID makes the daemon look as if it ran as uid for the test's duration.
func asUID(t *testing.T, uid int) {
	t.Helper()
	old := processEUID
	processEUID = func() int { return uid }
	t.Cleanup(func() { processEUID = old })
}

func ptr(s string) *string { return &s }
