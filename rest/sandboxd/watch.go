package sandboxd

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/julienschmidt/httprouter"

	"sandfs/core/journal"
	"sandfs/rest/httpkit"
)

// Watch: GET /v1/watch?path&recursive&since — the KEP's Watch(path) ->
// Stream[WatchEvent], which the KEP names without an HTTP shape; this is
// sandfs's, as server-sent events (docs/api.md §5b):
//
//	event: watch_started
//	data: {"path":"/d","recursive":false,"seq":N}
//
//	id: SEQ
//	event: change
//	data: {"seq":SEQ,"type":"create","path":"/d/f",…}
//
//	event: overflow
//	data: {"seq":N}
//
//	event: shutdown
//	data: {"reason":"the daemon is stopping"}
//
// with a comment line after each quiet httpkit.SSEHeartbeat. The events
// come from the sandbox's journal: a live subscription, and the journal
// read back (Scan) for what the subscription cannot give, so the stream
// has neither gap nor duplicate:
//
//   - resuming (since, or Last-Event-ID as EventSource sends it), the
//     subscription opens first, then the journal's events after since up
//     to its seq then are replayed, and live events at or below what was
//     replayed are skipped;
//   - when the subscription drops events (a reader slower than the
//     changes), the journal is read back from the last seq sent instead of
//     losing them.
//
// overflow is sent only when events really are lost to the client: the
// journal no longer keeps some after the seq to resume from. Memory per
// client stays bounded: the subscription's buffer is fixed and a replay
// writes as it reads, under the write deadline of httpkit.SSEWriter.

// watchBuffer is the live events a stream holds for its writer; past it
// the journal is read back instead.
const watchBuffer = 256

// watchBatch is how many events a stream writes before it flushes them.
const watchBatch = 256

// watchFS is what the watch needs from core.
type watchFS interface {
	filesFS
	Journal() *journal.Journal
}

// WatchStarted is the data of the first event.
type WatchStarted struct {
	Path      string `json:"path"`
	Recursive bool   `json:"recursive"`
	Seq       uint64 `json:"seq"` // live events follow this seq
}

// WatchEvent is the data of a change event.
type WatchEvent struct {
	Seq        uint64 `json:"seq"`
	Type       string `json:"type"` // create, modify, delete, rename, attrib
	Path       string `json:"path"`
	OldPath    string `json:"old_path,omitempty"`
	IsDir      bool   `json:"is_dir"`
	Size       int64  `json:"size"`
	ModifiedAt string `json:"modified_at"`
	Origin     string `json:"origin"`
	Actor      string `json:"actor,omitempty"`
}

// WatchOverflow is the data of an overflow event: events after seq (of
// the watched path or not) are no longer kept, some of them are missing.
type WatchOverflow struct {
	Seq uint64 `json:"seq"`
}

// WatchShutdown is the data of the last event when the daemon stops or the
// sandbox goes.
type WatchShutdown struct {
	Reason string `json:"reason"`
}

// watchTypes are the journal's types under the names the stream gives
// them, after inotify's (IN_MODIFY, IN_DELETE, IN_ATTRIB).
var watchTypes = map[journal.Type]string{
	journal.Create: "create",
	journal.Write:  "modify",
	journal.Remove: "delete",
	journal.Rename: "rename",
	journal.Chmod:  "attrib",
}

// watchEventOf is e on the wire. A change that leaves no file (a delete)
// has no mtime: its modified_at is when the journal took it.
func watchEventOf(e journal.Event) WatchEvent {
	t := e.Mtime
	if t.IsZero() {
		t = e.Time
	}
	return WatchEvent{Seq: e.Seq, Type: watchTypes[e.Type], Path: e.Path, OldPath: e.OldPath, IsDir: e.IsDir,
		Size: e.Size, ModifiedAt: t.UTC().Format(time.RFC3339), Origin: string(e.Origin), Actor: e.Actor}
}

// watchScope is the watched directory: with recursive everything beneath
// it, else it and its direct entries.
type watchScope struct {
	dir       string
	recursive bool
}

// matches says whether an event is told: a rename when either end is
// covered, so a file moved out of the tree is seen to leave it.
func (w watchScope) matches(e journal.Event) bool {
	return journal.Covers(e.Path, w.dir, w.recursive) || journal.Covers(e.OldPath, w.dir, w.recursive)
}

// watchRequest is a watch's parameters, checked before the stream starts.
type watchRequest struct {
	scope watchScope
	since *uint64 // resume after this seq; nil: from now
}

func (f *Family) watchRequest(r *http.Request) (watchRequest, error) {
	var wr watchRequest
	q, err := httpkit.Query(r)
	if err != nil {
		return wr, err
	}
	if wr.scope.recursive, err = httpkit.BoolQuery(q, "recursive", false, httpkit.PlainDialect); err != nil {
		return wr, err
	}
	since := q.Get("since")
	if _, ok := q["since"]; ok && since == "" {
		return wr, httpkit.InvalidRequest("since must be a journal seq (an integer 0 or more), got %q", since)
	}
	if id := strings.TrimSpace(r.Header.Get("Last-Event-ID")); id != "" {
		since = id // EventSource reconnects with the URL it began with: the last id it saw is newer
	}
	if since != "" {
		n, err := strconv.ParseUint(since, 10, 64)
		if err != nil {
			return wr, httpkit.InvalidRequest("since (or Last-Event-ID) must be a journal seq (an integer 0 or more), got %q", since)
		}
		wr.since = &n
	}
	// path is required, as the KEP's Watch(path) takes one: a stream of the
	// whole sandbox is asked for with path=/, never by leaving it out.
	p, err := httpkit.RequiredQuery(q, "path", httpkit.PlainDialect)
	if err != nil {
		return wr, err
	}
	ctx := r.Context()
	if wr.scope.dir, err = f.cleanPath(ctx, p); err != nil {
		return wr, err
	}
	info, err := f.fs(ctx).Stat(ctx, wr.scope.dir)
	if err != nil {
		return wr, err
	}
	if !info.IsDir() {
		return wr, httpkit.InvalidRequest("%s is not a directory: a watch follows a directory", wr.scope.dir)
	}
	return wr, nil
}

// watch: GET /v1/watch?path&recursive&since — the change stream of a
// directory.
func (f *Family) watch(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	wr, err := f.watchRequest(r)
	if err != nil {
		return err
	}
	j := f.host.SandboxOf(r.Context()).Journal()
	sub := j.Subscribe(wr.scope.matches, watchBuffer)
	defer sub.Close()
	top := j.Seq() // the subscription has every event after it
	ctx, done := f.host.StreamContext(r.Context())
	defer done()

	s := &watchStream{sw: httpkit.StartSSE(w), j: j, scope: wr.scope, last: top}
	s.sw.Arm()
	s.sw.Event("", "watch_started", WatchStarted{Path: wr.scope.dir, Recursive: wr.scope.recursive, Seq: top})
	if wr.since != nil && *wr.since < top {
		s.last = *wr.since
		s.catchUp(ctx, top)
	}
	if s.sw.Flush() != nil {
		return nil
	}
	heartbeat := time.NewTicker(httpkit.SSEHeartbeat)
	defer heartbeat.Stop()
	for {
		select {
		case <-ctx.Done():
			if reason := f.host.EndReason(r.Context()); r.Context().Err() == nil && reason != "" {
				s.sw.Arm()
				s.sw.Event("", "shutdown", WatchShutdown{Reason: reason})
				s.sw.Flush()
			}
			return nil // the client went away, the daemon stops or the sandbox goes
		case <-heartbeat.C:
			s.sw.Arm()
			s.sw.Comment("keep-alive")
		case e, ok := <-sub.C:
			if !ok {
				return nil // the journal closed the feed: the sandbox goes
			}
			s.sw.Arm()
			for n := 0; ; n++ {
				if sub.TakeDropped() > 0 {
					s.catchUp(ctx, j.Seq()) // covers e and whatever is buffered after it
				} else if e.Seq > s.last {
					s.send(e)
				}
				if n >= watchBatch || len(sub.C) == 0 {
					break
				}
				if e, ok = <-sub.C; !ok {
					break
				}
			}
			heartbeat.Reset(httpkit.SSEHeartbeat)
		}
		if s.sw.Flush() != nil {
			return nil // the client stopped reading (the write deadline) or went away
		}
	}
}

// watchStream is one client's stream: where it is in the journal.
type watchStream struct {
	sw    *httpkit.SSEWriter
	j     *journal.Journal
	scope watchScope
	last  uint64 // the seq the client has every covered event up to
}

func (s *watchStream) send(e journal.Event) {
	s.sw.Event(strconv.FormatUint(e.Seq, 10), "change", watchEventOf(e))
	s.last = e.Seq
}

// catchUp sends the journal's covered events after s.last up to through,
// led by an overflow event when the journal no longer keeps some of them;
// it writes as it reads, flushing every watchBatch events.
func (s *watchStream) catchUp(ctx context.Context, through uint64) {
	told := s.last+1 < s.j.Oldest()
	if told {
		s.sw.Event("", "overflow", WatchOverflow{Seq: s.last})
	}
	from, n := s.last, 0
	lost, err := s.j.Scan(ctx, s.last, func(e journal.Event) bool {
		if e.Seq > through {
			return false
		}
		if e, ok := journal.Reportable(e); ok && s.scope.matches(e) {
			s.sw.Event(strconv.FormatUint(e.Seq, 10), "change", watchEventOf(e))
			if n++; n%watchBatch == 0 {
				if s.sw.Flush() != nil {
					return false
				}
				s.sw.Arm()
			}
		}
		return true
	})
	if lost && !told { // a loss the journal marked on the way (the kernel's queue overflowed)
		s.sw.Event("", "overflow", WatchOverflow{Seq: from})
	}
	if err == nil {
		s.last = max(s.last, through)
	}
}
