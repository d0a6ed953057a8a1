package rest

import (
	"encoding/json"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/internal/testenv"
	"sandfs/rest/aio"
)

// The AIO family's test helpers: harnesses of its file and transfer
// routes, request builders, and checks of its answers' shapes.

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
	h := &harness{root: root, logs: &testenv.Buffer{}, served: make(chan struct{}, 64)}
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
func newFilesHarness(t *testing.T, tweak func(*aio.FileLimits)) *harness {
	t.Helper()
	h := newHarness(t, harnessOpts{})
	l := aio.DefaultFileLimits
	if tweak != nil {
		tweak(&l)
	}
	h.srv.aio.SetFileLimits(l)
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
	if env.Message == nil || *env.Message != aio.MessageOK {
		t.Errorf("message: got %v, want %q", env.Message, aio.MessageOK)
	}
	if env.Hint != nil {
		t.Errorf("hint: got %q, want null", *env.Hint)
	}
	return env.Data
}

// wantAIOError checks a failed AIO answer: status, envelope, and the failure
// data's error_type; it returns the data for more checks.
func wantAIOError(t *testing.T, r resp, status int, errorType string) aio.Failure {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status: got %d, want %d (body %s)", r.Status, status, r.Body)
	}
	env := decode[aioEnv[aio.Failure]](t, r)
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
	v := decode[aio.Validation](t, r)
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
	case FamilySandboxd:
		wantStatus(t, r, status)
		if err := checkFamilyShape(family, r); err != nil {
			t.Errorf("sandboxd error: %v: %s", err, r.Body)
		}
	case FamilyMCP:
		wantStatus(t, r, status)
		if err := checkFamilyShape(family, r); err != nil {
			t.Errorf("%v: %s", err, r.Body)
		}
	default:
		wantProblem(t, r, status, agentType)
	}
}

// errnoData checks the errno fields of a failure.
func wantErrno(t *testing.T, f aio.Failure, errno unix.Errno, exception string) {
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
func wantV1Failure(t *testing.T, r resp, errorType string, errno unix.Errno, exception string) aio.Failure {
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
