package httpkit

import (
	"bufio"
	"encoding/json"
	"net/http"
	"time"
)

// Server-sent events, as every family's event streams write them: the
// headers, events and comments buffered and flushed a batch at a time,
// each batch under a write deadline, so a client that stops reading ends
// its stream instead of holding the handler (and the memory of a queue)
// forever.

const (
	// SSEHeartbeat is how long a stream stays quiet before it writes a
	// comment line, so proxies and clients see it is alive.
	SSEHeartbeat = 15 * time.Second
	// SSEWriteTimeout is how long a client has to drain a batch: past it
	// the stream ends.
	SSEWriteTimeout = 30 * time.Second
)

// SSEWriter writes one event stream. The first error (a marshal, a write,
// a deadline) sticks: every later call is a no-op and Flush returns it.
type SSEWriter struct {
	rc  *http.ResponseController
	bw  *bufio.Writer
	err error
}

// StartSSE answers 200 text/event-stream, unbuffered by proxies, and is
// the stream's writer.
func StartSSE(w http.ResponseWriter) *SSEWriter {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	return &SSEWriter{rc: http.NewResponseController(w), bw: bufio.NewWriterSize(w, 32<<10)}
}

// Event writes an event: its id line when id is not "", its name, and
// data as one line of JSON.
func (s *SSEWriter) Event(id, name string, data any) {
	if s.err != nil {
		return
	}
	b, err := json.Marshal(data)
	if err != nil {
		s.err = err
		return
	}
	if id != "" {
		s.bw.WriteString("id: " + id + "\n")
	}
	s.bw.WriteString("event: " + name + "\ndata: ")
	s.bw.Write(b)
	_, s.err = s.bw.WriteString("\n\n")
}

// Comment writes a comment line, which clients ignore (a heartbeat).
func (s *SSEWriter) Comment(text string) {
	if s.err == nil {
		_, s.err = s.bw.WriteString(": " + text + "\n\n")
	}
}

// Arm gives the writes of the next batch SSEWriteTimeout to drain (the
// buffer may spill to the connection before Flush).
func (s *SSEWriter) Arm() { s.rc.SetWriteDeadline(time.Now().Add(SSEWriteTimeout)) }

// Flush sends what is buffered to the client.
func (s *SSEWriter) Flush() error {
	if s.err != nil {
		return s.err
	}
	if s.err = s.bw.Flush(); s.err == nil {
		s.err = s.rc.Flush()
	}
	return s.err
}
