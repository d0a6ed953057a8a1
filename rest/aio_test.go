package rest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

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

func TestAIOUnknownRoute(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	for _, p := range []string{"/v2/nope", "/v1/file/nope"} {
		r := h.do(t, req{Method: "GET", Target: p})
		f := wantAIOError(t, r, 404, "not_found")
		if f.Errno != nil {
			t.Errorf("%s: errno: got %v, want null", p, *f.Errno)
		}
	}
	r := h.do(t, req{Method: "PUT", Target: "/v2/watch"})
	wantAIOError(t, r, http.StatusMethodNotAllowed, "method_not_allowed")
}

func TestAIORenderV1V2(t *testing.T) {
	enoent := errKind{Kind: kindNotFound, Status: 404, Errno: unix.ENOENT, Op: "stat", Path: "/x", Detail: "stat /x: no such file or directory"}
	cases := []struct {
		name       string
		k          errKind
		v1, v2     int
		retryable  bool
		exception  string
		errnoIsNil bool
	}{
		{"filesystem failure", enoent, 200, 404, false, "FileNotFoundError", false},
		{"bad path", errKind{Kind: kindInvalidPath, Status: 400, Errno: unix.EINVAL, Op: "resolve", Detail: "x"}, 400, 400, false, "OSError", false},
		{"internal", errKind{Kind: kindIO, Status: 500, Errno: unix.EIO, Internal: true, Detail: "internal error"}, 500, 500, false, "OSError", false},
		{"too many watchers", errKind{Kind: kindTooManyWatchers, Status: 429, Detail: "x"}, 429, 429, true, "", true},
		{"timeout", errKind{Kind: kindTimeout, Status: 503, Detail: "x"}, 503, 503, true, "TimeoutError", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range []struct {
				render func(http.ResponseWriter, errKind)
				want   int
			}{{renderAIOv1, c.v1}, {renderAIOv2, c.v2}} {
				rec := httptest.NewRecorder()
				v.render(rec, c.k)
				if rec.Code != v.want {
					t.Errorf("status: got %d, want %d", rec.Code, v.want)
				}
				var env aioEnv[aioFailure]
				if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
					t.Fatal(err)
				}
				f := env.Data
				if f.Retryable != c.retryable || f.ErrorType != string(c.k.Kind) || f.Path != c.k.Path || f.Operation != c.k.Op {
					t.Errorf("data: got %+v", f)
				}
				if (f.Errno == nil) != c.errnoIsNil {
					t.Errorf("errno: got %v, want nil %v", f.Errno, c.errnoIsNil)
				}
				got := ""
				if f.ExceptionType != nil {
					got = *f.ExceptionType
				}
				if got != c.exception {
					t.Errorf("exception_type: got %q, want %q", got, c.exception)
				}
			}
		})
	}
}
