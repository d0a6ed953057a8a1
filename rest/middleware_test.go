package rest

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/julienschmidt/httprouter"
)

var (
	_ io.ReaderFrom                             = (*trackingWriter)(nil)
	_ http.Flusher                              = (*trackingWriter)(nil)
	_ interface{ Unwrap() http.ResponseWriter } = (*trackingWriter)(nil)
)

// TestPanicIsA500 serves routes whose handlers panic through the same
// wrapping every table route gets.
func TestPanicIsA500(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	router := httprouter.New()
	router.Handle("GET", "/v1/fs/boom", h.srv.handle(h.srv.shapeOf(FamilyAgent).On("GET", "/v1/fs/boom", false,
		func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			panic("secret /host/root/path in a panic")
		})))
	router.Handle("GET", "/v1/fs/late", h.srv.handle(h.srv.shapeOf(FamilyAgent).On("GET", "/v1/fs/late", false,
		func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			w.WriteHeader(200)
			io.WriteString(w, "partial")
			panic("late")
		})))
	ts := httptest.NewServer(router)
	defer ts.Close()

	res, err := http.Get(ts.URL + "/v1/fs/boom")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	p := wantProblem(t, resp{Status: res.StatusCode, Header: res.Header, Body: body}, 500, "stream_error")
	if strings.Contains(string(body), "secret") || strings.Contains(string(body), "/host/root") {
		t.Errorf("body carries the panic: %s", body)
	}
	if !strings.Contains(p.Detail, "internal error ") {
		t.Errorf("detail: got %q, want a generic internal error with an id", p.Detail)
	}
	if log := h.logs.String(); !strings.Contains(log, "secret /host/root/path in a panic") || !strings.Contains(log, "stack=") {
		t.Errorf("server log: want the panic and its stack, got:\n%s", log)
	}

	// A panic after the answer began cuts the connection: the client must
	// not take a truncated 200 as whole.
	res, err = http.Get(ts.URL + "/v1/fs/late")
	if err == nil {
		_, err = io.ReadAll(res.Body)
		res.Body.Close()
	}
	if err == nil {
		t.Errorf("late panic: got a complete answer, want a cut connection")
	}
}

// TestInternalErrorIsLogged: an error httpkit.Classify does not know is a 500 whose
// detail is generic and whose full text is in the log under the same id.
func TestInternalErrorIsLogged(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	router := httprouter.New()
	router.Handle("GET", "/v1/fs/err", h.srv.handle(h.srv.shapeOf(FamilyAgent).On("GET", "/v1/fs/err", false,
		func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
			return io.ErrClosedPipe
		})))
	ts := httptest.NewServer(router)
	defer ts.Close()
	res, err := http.Get(ts.URL + "/v1/fs/err")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	p := wantProblem(t, resp{Status: res.StatusCode, Header: res.Header, Body: body}, 500, "stream_error")
	if strings.Contains(p.Detail, io.ErrClosedPipe.Error()) {
		t.Errorf("detail %q carries the internal error", p.Detail)
	}
	id := strings.Fields(strings.TrimPrefix(p.Detail, "stream error: internal error "))[0]
	id = strings.TrimSuffix(id, ";")
	log := h.logs.String()
	if !strings.Contains(log, "id="+id) || !strings.Contains(log, io.ErrClosedPipe.Error()) {
		t.Errorf("server log: want id %s and the error, got:\n%s", id, log)
	}
}
