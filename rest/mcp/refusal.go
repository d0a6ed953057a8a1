package mcp

import (
	"bytes"
	"io"
	"net/http"
	"strings"

	"sandfs/rest/httpkit"
)

// The SDK refuses some requests itself (a missing Accept, a body it cannot
// parse, GET and DELETE in stateless mode) with net/http's plain-text
// error. Every refusal of the daemon speaks its family's shape (rest's
// rule), so refusalWriter holds such an answer back and the family renders
// it as a JSON-RPC error with the same status.

// refusalWriter passes a success through, and keeps a plain-text error.
type refusalWriter struct {
	http.ResponseWriter
	status int // a refusal kept, 0 while none
	msg    bytes.Buffer
}

func (w *refusalWriter) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.status = code
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusalWriter) Write(b []byte) (int, error) {
	if w.status != 0 {
		if w.msg.Len() < 1024 {
			w.msg.Write(b[:min(len(b), 1024)])
		}
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

func (w *refusalWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok && w.status == 0 {
		f.Flush()
	}
}

func (w *refusalWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// refusal is the error the kept answer stands for, nil when none was kept.
func (w *refusalWriter) refusal() error {
	if w.status == 0 {
		return nil
	}
	h := w.Header()
	h.Del("Content-Type")
	h.Del("X-Content-Type-Options")
	msg := strings.TrimSpace(w.msg.String())
	kind := httpkit.KindInvalidRequest
	switch w.status {
	case http.StatusMethodNotAllowed:
		kind = httpkit.KindMethodNotAllowed
		msg += ": the daemon serves MCP statelessly, POST only (no session, no server stream)"
	case http.StatusUnsupportedMediaType:
		kind = httpkit.KindUnsupportedMedia
	case http.StatusRequestEntityTooLarge:
		kind = httpkit.KindTooLarge
	case http.StatusNotFound:
		kind = httpkit.KindNotFound
	}
	return &httpkit.RequestError{Kind: kind, Status: w.status, Msg: msg}
}

// readBody reads the whole body, at most limit bytes (413 past it),
// before the SDK looks at the request: a body over the limit is refused as
// such whatever else is wrong with the request.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		return nil, httpkit.InvalidRequest("reading the body: %v", err)
	}
	if int64(len(b)) > limit {
		return nil, httpkit.TooLarge("the body is over %d bytes", limit)
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	return b, nil
}
