package rest

import (
	"io"
	"net/http"
	"runtime/debug"

	"sandfs/rest/httpkit"
)

// trackingWriter remembers whether the response has started, so a panic
// after the first byte is not answered with a second status line. It keeps
// the fast paths of the writer it wraps: ReadFrom still reaches the
// connection's sendfile, and http.ResponseController finds Flush and the
// deadlines through Unwrap.
// It also keeps the status and the body bytes written, for /metrics.
type trackingWriter struct {
	http.ResponseWriter
	started bool
	status  int   // the final status written (0: none yet)
	n       int64 // body bytes written
}

func (t *trackingWriter) WriteHeader(code int) {
	if code >= 200 {
		t.started = true
		if t.status == 0 {
			t.status = code
		}
	}
	t.ResponseWriter.WriteHeader(code)
}

func (t *trackingWriter) Write(b []byte) (int, error) {
	t.started = true
	if t.status == 0 {
		t.status = http.StatusOK
	}
	n, err := t.ResponseWriter.Write(b)
	t.n += int64(n)
	return n, err
}

// ReadFrom lets io.Copy (and http.ServeContent) hand the source to the
// underlying writer, which uses sendfile for an *os.File.
func (t *trackingWriter) ReadFrom(r io.Reader) (int64, error) {
	t.started = true
	if t.status == 0 {
		t.status = http.StatusOK
	}
	n, err := io.Copy(t.ResponseWriter, r)
	t.n += n
	return n, err
}

func (t *trackingWriter) Flush() {
	t.started = true
	http.NewResponseController(t.ResponseWriter).Flush()
}

func (t *trackingWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// recoverPanic turns a panic in a handler into a 500 in the family's shape
// and logs the panic with its stack. The client never sees the panic text.
// http.ErrAbortHandler is re-raised: it is how a handler asks net/http to
// cut the connection.
func (s *Server) recoverPanic(w *trackingWriter, r *http.Request, fam httpkit.Shape, pattern string) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	id := errorID()
	s.log.Error("handler panic", "id", id, "method", r.Method, "route", pattern, "panic", v, "stack", string(debug.Stack()))
	if w.started {
		// Too late for a status: cut the connection so the client sees a
		// truncated answer rather than a complete-looking one.
		panic(http.ErrAbortHandler)
	}
	fam.Render(w, httpkit.ErrKind{Kind: httpkit.KindIO, Status: http.StatusInternalServerError, Internal: true,
		Detail: "internal error " + id + "; the server log has the details"})
}

// lastResortPanic is httprouter's PanicHandler, for a panic outside any
// route's own recover (in the router itself).
func (s *Server) lastResortPanic(w http.ResponseWriter, r *http.Request, v any) {
	if v == http.ErrAbortHandler {
		// A handler cutting its connection on purpose (recoverPanic
		// re-raised it): let net/http abort the connection, log nothing.
		panic(v)
	}
	id := errorID()
	s.log.Error("router panic", "id", id, "method", r.Method, "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
	s.shapeForPath(r.URL.Path).Render(w, httpkit.ErrKind{Kind: httpkit.KindIO, Status: http.StatusInternalServerError, Internal: true,
		Detail: "internal error " + id + "; the server log has the details"})
}
