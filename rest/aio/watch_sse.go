package aio

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

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
// client that reads nothing for httpkit.SSEWriteTimeout is cut off.

// sseBatch is the events read from the watcher per write.
const sseBatch = 1000

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

	sw := httpkit.StartSSE(w)
	sw.Arm()
	sw.Event("", "watch_started", SSEStarted{WatcherID: id, Cursor: cursor})
	if sw.Flush() != nil {
		return nil
	}
	ctx, done := s.host.StreamContext(r.Context())
	defer done()
	overflowing := false
	for {
		b, err := wt.Poll(ctx, cursor, sseBatch, httpkit.SSEHeartbeat)
		if err != nil {
			if reason := s.host.EndReason(r.Context()); r.Context().Err() == nil && reason != "" {
				sw.Arm()
				sw.Event("", "shutdown", SSEShutdown{Reason: reason, Cursor: cursor})
				sw.Flush()
			}
			return nil // the client went away, the watcher stopped, the daemon stops or the sandbox goes
		}
		sw.Arm()
		if b.Overflow && !overflowing {
			sw.Event("", "overflow", SSEOverflow{WatcherID: id, Cursor: b.Cursor, Overflow: true})
		}
		overflowing = b.Overflow
		if len(b.Events) == 0 && !b.Overflow {
			sw.Comment("keep-alive")
		}
		for _, e := range b.Events {
			sw.Event(id+":"+strconv.FormatUint(e.Seq, 10), "file_change", wireEvent(e, base, isFile))
		}
		cursor = b.Cursor
		if sw.Flush() != nil {
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
