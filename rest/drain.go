package rest

import (
	"io"
	"net/http"
	"time"
)

// # Answering a client that sends its whole body first
//
// Some clients (Python's urllib and http.client, many scripts) write the
// whole request body before they read a byte of the answer. When a handler
// refuses a body without reading it all (413 over a limit decided from
// Content-Length, 507 when the disk fills half-way, 401, 400), net/http
// closes the connection with the unread rest of the body in the kernel's
// queue (more than its maxPostHandlerReadBytes, 256 KiB, is never drained).
// The kernel answers the client's next segments with RST, the client's
// write fails, and the answer it never read is lost with the connection:
// such a client sees "connection reset" instead of the 413.
//
// drainBody, run once after every route handler, sends the answer at once
// (a flush, so a client that reads while it writes has it without delay)
// and then reads and discards what the client still sends, so it can
// finish writing and read the answer. It is bounded so it cannot be used
// to hold the daemon: at most drainMaxBytes (a body announcing more is not
// drained: the connection is closed as before) and at most drainMaxTime,
// after which the connection is closed whatever the client is doing. A
// client that asked "Expect: 100-continue" and was answered before the
// handler read anything was never told to send, so it is not waited for.
// A handler that read its body to the end leaves nothing to do.
var (
	drainMaxBytes int64 = 128 << 20
	drainMaxTime        = 5 * time.Second
)

// drainBody is the hook: body is the handler's view of r.Body (nil when the
// request had none).
func drainBody(w http.ResponseWriter, r *http.Request, body *countingBody) {
	if body == nil {
		return
	}
	// net/http decides what to do with an unread body by the type of
	// r.Body (its own body or expectContinueReader: close when much is
	// left; anything else: read 256 KiB first, which waits for ever on a
	// client that was never sent its 100 Continue). Give it back its own.
	r.Body = body.ReadCloser
	if body.eof || r.ContentLength == 0 {
		return
	}
	if !body.touched && r.Header.Get("Expect") != "" {
		return // no 100 Continue was sent: the client sends nothing more
	}
	limit := drainMaxBytes
	if r.ContentLength > 0 {
		rest := r.ContentLength - body.n
		if rest <= 0 || rest > drainMaxBytes {
			return
		}
		limit = rest
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(drainMaxTime)) != nil {
		return
	}
	defer rc.SetReadDeadline(time.Time{})
	if rc.Flush() != nil {
		return
	}
	io.CopyN(io.Discard, body.ReadCloser, limit)
}
