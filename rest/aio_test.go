package rest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/rest/aio"
	"sandfs/rest/httpkit"
)

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
	enoent := httpkit.ErrKind{Kind: httpkit.KindNotFound, Status: 404, Errno: unix.ENOENT, Op: "stat", Path: "/x", Detail: "stat /x: no such file or directory"}
	cases := []struct {
		name       string
		k          httpkit.ErrKind
		v1, v2     int
		retryable  bool
		exception  string
		errnoIsNil bool
	}{
		{"filesystem failure", enoent, 200, 404, false, "FileNotFoundError", false},
		{"bad path", httpkit.ErrKind{Kind: httpkit.KindInvalidPath, Status: 400, Errno: unix.EINVAL, Op: "resolve", Detail: "x"}, 400, 400, false, "OSError", false},
		{"internal", httpkit.ErrKind{Kind: httpkit.KindIO, Status: 500, Errno: unix.EIO, Internal: true, Detail: "internal error"}, 500, 500, false, "OSError", false},
		{"too many watchers", httpkit.ErrKind{Kind: httpkit.KindTooManyWatchers, Status: 429, Detail: "x"}, 429, 429, true, "", true},
		{"timeout", httpkit.ErrKind{Kind: httpkit.KindTimeout, Status: 503, Detail: "x"}, 503, 503, true, "TimeoutError", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range []struct {
				render func(http.ResponseWriter, httpkit.ErrKind)
				want   int
			}{{aio.RenderV1, c.v1}, {aio.RenderV2, c.v2}} {
				rec := httptest.NewRecorder()
				v.render(rec, c.k)
				if rec.Code != v.want {
					t.Errorf("status: got %d, want %d", rec.Code, v.want)
				}
				var env aioEnv[aio.Failure]
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
