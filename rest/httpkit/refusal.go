package httpkit

import (
	"io"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"
)

// RefusalCatcher stands between net/http helpers that answer refusals
// themselves with a text/plain body (http.ServeContent's 416 for a range it
// cannot serve and 412 for a failed precondition, the websocket handshake's
// 400/426) and the client: a status of 400 or more is held back, with its
// message, so that the handler can return it as an error and the route's
// family render it in its own shape. Anything else passes through,
// ReadFrom included (sendfile), and Unwrap lets http.ResponseController and
// the websocket hijack reach the connection.
type RefusalCatcher struct {
	http.ResponseWriter
	Status int
	Msg    strings.Builder
}

func (c *RefusalCatcher) WriteHeader(code int) {
	if code >= 400 && c.Status == 0 {
		c.Status = code
		return
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *RefusalCatcher) Write(b []byte) (int, error) {
	if c.Status != 0 {
		if c.Msg.Len() < 512 {
			c.Msg.Write(b)
		}
		return len(b), nil
	}
	return c.ResponseWriter.Write(b)
}

func (c *RefusalCatcher) ReadFrom(r io.Reader) (int64, error) {
	if c.Status != 0 {
		return io.Copy(io.Discard, r)
	}
	return io.Copy(c.ResponseWriter, r)
}

func (c *RefusalCatcher) Unwrap() http.ResponseWriter { return c.ResponseWriter }

// refusal is the caught refusal as an error, nil when there was none.
func (c *RefusalCatcher) Refusal() error {
	if c.Status == 0 {
		return nil
	}
	msg := strings.TrimSpace(c.Msg.String())
	if msg == "" {
		msg = strings.ToLower(http.StatusText(c.Status))
	}
	return &RequestError{KindInvalidRequest, c.Status, msg}
}

// ServeContent is http.ServeContent (Range, HEAD, conditional requests,
// sendfile) whose refusals come back as an error in the family's shape
// rather than as net/http's plain text.
func ServeContent(w http.ResponseWriter, r *http.Request, modtime time.Time, content io.ReadSeeker) error {
	if rng := r.Header.Get("Range"); rng != "" {
		kept, dropped := dropEmptySuffixRanges(rng)
		if dropped && kept == "" {
			size, err := content.Seek(0, io.SeekEnd)
			if err != nil {
				return err
			}
			w.Header().Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
			return &RequestError{KindInvalidRequest, http.StatusRequestedRangeNotSatisfiable, "invalid range: a suffix of 0 bytes selects nothing"}
		}
		if dropped {
			r = r.Clone(r.Context())
			r.Header.Set("Range", kept)
		}
	}
	c := &RefusalCatcher{ResponseWriter: w}
	http.ServeContent(c, r, "", modtime, content)
	return c.Refusal()
}

// dropEmptySuffixRanges removes the suffix ranges of zero bytes ("-0") from
// a bytes Range header. RFC 9110 §14.1.3 makes such a range unsatisfiable,
// but http.ServeContent answers it 206 with the impossible Content-Range
// "bytes N-(N-1)/N" and an empty part. dropped says whether any was
// removed; kept is "" when nothing is left.
func dropEmptySuffixRanges(h string) (kept string, dropped bool) {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok {
		return h, false
	}
	var out []string
	for _, ra := range strings.Split(spec, ",") {
		// Read as net/http reads it: a suffix range is "-N" around which
		// ASCII space is ignored (textproto.TrimString), N as
		// strconv.ParseInt takes it.
		if start, end, ok := strings.Cut(ra, "-"); ok && textproto.TrimString(start) == "" {
			end = textproto.TrimString(end)
			if n, err := strconv.ParseInt(end, 10, 64); err == nil && n == 0 && end[0] != '-' {
				dropped = true
				continue
			}
		}
		out = append(out, ra)
	}
	if !dropped {
		return h, false
	}
	if len(out) == 0 {
		return "", true
	}
	return "bytes=" + strings.Join(out, ","), true
}
