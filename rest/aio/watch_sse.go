package aio

import (
	"bufio"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"sandfs/rest/httpkit"
)

// Server-sent events of a watcher (api.md §4; the AIO spec: "A browser UI that
// would rather receive pushed events than poll can request the event stream
// with Accept: text/event-stream").
//
// The stream is:
//
//	event: watch_started
//	data: {"watcher_id":"w_…","cursor":N}
//
//	id: w_…:SEQ
//	event: file_change
//	data: {event JSON, as a poll answers it}
//
//	event: overflow
//	data: {"watcher_id":"w_…","cursor":N,"overflow":true}
//
// with a comment line (": keep-alive") after each quiet heartbeat interval.
// The stream resumes after the seq of Last-Event-ID (as EventSource sends
// it when it reconnects), else after ?cursor, else from 0 (everything the
// watcher holds). It ends when the client goes away or the watcher stops,
// or, led by
//
//	event: shutdown
//	data: {"reason":"the daemon is stopping","cursor":N}
//
// when the daemon stops (rest/streams.go).
//
// Memory stays bounded whatever the client does: the handler reads the
// watcher's own bounded buffer with a cursor, a batch at a time, and blocks
// in Write while the client does not read; nothing is queued per client. A
// client that reads nothing for sseWriteTimeout is cut off.

const (
	sseBatch        = 1000             // events read from the watcher per write
	sseHeartbeat    = 15 * time.Second // default heartbeat interval
	sseWriteTimeout = 30 * time.Second // a batch the client does not drain in this long ends the stream
)

// serveWatchSSE streams watcher id. Errors before the stream starts (an
// unknown watcher, a bad cursor) are returned to be rendered in the family's
// shape; once it has started it ends quietly.
func (s *Family) serveWatchSSE(w http.ResponseWriter, r *http.Request, id string, q url.Values) error {
	n, err := httpkit.IntQuery[int64](q, "cursor", httpkit.AIODialect)
	if err != nil {
		return err
	}
	var cursor uint64
	if n != nil {
		if *n < 0 {
			return httpkit.WithOp("watch_events", httpkit.InvalidRequest("cursor must be 0 or more, got %d", *n))
		}
		cursor = uint64(*n)
	}
	if seq, ok := lastEventSeq(r.Header.Get("Last-Event-ID"), id); ok {
		cursor = seq
	}
	wt, err := s.watchFS(r.Context()).Journal().Watcher(id)
	if err != nil {
		return httpkit.WithOp("watch_events", unknownWatcher(id, err))
	}
	base, isFile := wt.Config().Path, s.watchesOf(r.Context()).isFile(id)

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	sw := newSSEWriter(w)
	sw.arm()
	sw.event("", "watch_started", SSEStarted{WatcherID: id, Cursor: cursor})
	if sw.flush() != nil {
		return nil
	}
	ctx, done := s.host.StreamContext(r.Context())
	defer done()
	overflowing := false
	for {
		b, err := wt.Poll(ctx, cursor, sseBatch, sseHeartbeat)
		if err != nil {
			if reason := s.host.EndReason(r.Context()); r.Context().Err() == nil && reason != "" {
				sw.arm()
				sw.event("", "shutdown", SSEShutdown{Reason: reason, Cursor: cursor})
				sw.flush()
			}
			return nil // the client went away, the watcher stopped, the daemon stops or the sandbox goes
		}
		sw.arm()
		if b.Overflow && !overflowing {
			sw.event("", "overflow", SSEOverflow{WatcherID: id, Cursor: b.Cursor, Overflow: true})
		}
		overflowing = b.Overflow
		if len(b.Events) == 0 && !b.Overflow {
			sw.comment("keep-alive")
		}
		for _, e := range b.Events {
			sw.event(id+":"+strconv.FormatUint(e.Seq, 10), "file_change", wireEvent(e, base, isFile))
		}
		cursor = b.Cursor
		if sw.flush() != nil {
			return nil
		}
	}
}

// lastEventSeq parses a Last-Event-ID "<watcher>:<seq>" naming watcher id.
func lastEventSeq(v, id string) (uint64, bool) {
	w, seq, ok := strings.Cut(strings.TrimSpace(v), ":")
	if !ok || w != id {
		return 0, false
	}
	n, err := strconv.ParseUint(seq, 10, 64)
	return n, err == nil
}

// sseWriter writes events into a buffer and flushes them to the client with
// a write deadline, so a client that stops reading ends the stream instead
// of holding the handler forever.
type sseWriter struct {
	rc  *http.ResponseController
	bw  *bufio.Writer
	err error
}

func newSSEWriter(w http.ResponseWriter) *sseWriter {
	return &sseWriter{rc: http.NewResponseController(w), bw: bufio.NewWriterSize(w, 32<<10)}
}

func (s *sseWriter) event(id, name string, data any) {
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

func (s *sseWriter) comment(text string) {
	if s.err == nil {
		_, s.err = s.bw.WriteString(": " + text + "\n\n")
	}
}

// arm gives the writes of the next batch sseWriteTimeout to drain (the
// buffer may spill to the connection before flush).
func (s *sseWriter) arm() { s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout)) }

func (s *sseWriter) flush() error {
	if s.err != nil {
		return s.err
	}
	if s.err = s.bw.Flush(); s.err == nil {
		s.err = s.rc.Flush()
	}
	return s.err
}
