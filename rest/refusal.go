package rest

import (
	"io"
	"net/http"
	"strings"
	"time"
)

// refusalCatcher stands between net/http helpers that answer refusals
// themselves with a text/plain body (http.ServeContent's 416 for a range it
// cannot serve and 412 for a failed precondition, the websocket handshake's
// 400/426) and the client: a status of 400 or more is held back, with its
// message, so that the handler can return it as an error and the route's
// family render it in its own shape. Anything else passes through,
// ReadFrom included (sendfile), and Unwrap lets http.ResponseController and
// the websocket hijack reach the connection.
type refusalCatcher struct {
	http.ResponseWriter
	status int
	msg    strings.Builder
}

func (c *refusalCatcher) WriteHeader(code int) {
	if code >= 400 && c.status == 0 {
		c.status = code
		return
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *refusalCatcher) Write(b []byte) (int, error) {
	if c.status != 0 {
		if c.msg.Len() < 512 {
			c.msg.Write(b)
		}
		return len(b), nil
	}
	return c.ResponseWriter.Write(b)
}

func (c *refusalCatcher) ReadFrom(r io.Reader) (int64, error) {
	if c.status != 0 {
		return io.Copy(io.Discard, r)
	}
	return io.Copy(c.ResponseWriter, r)
}

func (c *refusalCatcher) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// refusal is the caught refusal as an error, nil when there was none.
func (c *refusalCatcher) refusal() error {
	if c.status == 0 {
		return nil
	}
	msg := strings.TrimSpace(c.msg.String())
	if msg == "" {
		msg = strings.ToLower(http.StatusText(c.status))
	}
	return &requestError{kindInvalidRequest, c.status, msg}
}

// serveContent is http.ServeContent (Range, HEAD, conditional requests,
// sendfile) whose refusals come back as an error in the family's shape
// rather than as net/http's plain text.
func serveContent(w http.ResponseWriter, r *http.Request, modtime time.Time, content io.ReadSeeker) error {
	c := &refusalCatcher{ResponseWriter: w}
	http.ServeContent(c, r, "", modtime, content)
	return c.refusal()
}
