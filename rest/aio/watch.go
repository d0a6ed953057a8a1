package aio

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/julienschmidt/httprouter"

	"sandfs/core"
	"sandfs/core/journal"
	"sandfs/core/pathmatch"
	"sandfs/rest/httpkit"
)

// The AIO watch routes (api.md §4 watch bullet, §6; the AIO spec "Watch a
// directory"): create, list, poll, SSE, stop, and the v1 wait. Every route
// acts on the selected sandbox (rest/selector.go; "default" without a selector)
// and its one journal, where the watcher lives; a watcher is a filtered,
// bounded view of that journal (core/journal), so a poll and an SSE stream
// read the watcher's own buffer with a cursor and nothing is ever queued
// per client.

// watchFS is what the watch routes need from core.
type watchFS interface {
	Clean(p string) (string, error)
	Stat(ctx context.Context, p string) (core.Info, error)
	Journal() *journal.Journal
	Watch() core.WatchView
}

var _ watchFS = (*core.Sandbox)(nil)

// watchState remembers which live watchers watch a file rather than a
// directory, so their events' relative_path is the file's name.
type watchState struct {
	mu    sync.Mutex
	files map[string]bool
}

func (ws *watchState) setFile(id string, isFile bool) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if ws.files == nil {
		ws.files = map[string]bool{}
	}
	if isFile {
		ws.files[id] = true
	}
}

// isFile takes the watcher's id or a reference to it ("w_….n").
func (ws *watchState) isFile(id string) bool {
	id, _, _ = strings.Cut(id, ".")
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return ws.files[id]
}

func (ws *watchState) forget(id string) {
	id, _, _ = strings.Cut(id, ".")
	ws.mu.Lock()
	defer ws.mu.Unlock()
	delete(ws.files, id)
}

func (s *Family) watchFS(ctx context.Context) watchFS { return s.host.SandboxOf(ctx) }

// watchesKey keeps a sandbox's watchState beside it (httpkit.Host.SandboxValue).
type watchesKey struct{}

// watchesOf is the watchState of the request's sandbox: it goes with the
// sandbox when Registry.Remove takes it out.
func (s *Family) watchesOf(ctx context.Context) *watchState {
	if v := s.host.SandboxValue(ctx, watchesKey{}, func() any { return new(watchState) }); v != nil {
		return v.(*watchState)
	}
	return &watchState{} // no sandbox "default": nothing to remember
}

// watchCreate: POST /v2/watch, POST /v1/file/watch {path, recursive,
// debounce, exclude, include_patterns} — a watcher on a directory or file
// (an identical config reuses the live watcher: reused:true). Each create
// answers its own reference as watcher_id, "w_….n", released once.
func (s *Family) watchCreate(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req watchCreateRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	cfg, err := watchConfig(req)
	if err != nil {
		return httpkit.WithOp("watch_create", err)
	}
	sb := s.watchFS(r.Context())
	p, err := sb.Clean(*req.Path)
	if err != nil {
		return httpkit.WithOp("watch_create", err)
	}
	info, err := sb.Stat(r.Context(), p)
	if err != nil {
		return httpkit.WithOp("watch_create", err)
	}
	cfg.Path = p
	wt, in, reused, err := sb.Journal().Watch(cfg)
	if err != nil {
		return httpkit.WithOp("watch_create", err)
	}
	if !reused {
		s.watchesOf(r.Context()).setFile(wt.ID, !info.IsDir())
	}
	return writeAIO(w, WatchCreated{
		WatcherID:     in.Ref,
		Path:          p,
		Status:        "active",
		CreatedAt:     rfc3339(in.Created),
		Reused:        reused,
		InitialCursor: in.InitialCursor,
	})
}

// watchConfig checks a create request against its bounds (400) and turns
// it into a journal config without its path.
func watchConfig(req watchCreateRequest) (journal.Config, error) {
	if req.Path == nil {
		return journal.Config{}, httpkit.InvalidField("body.path", "missing", "Field required")
	}
	cfg := journal.Config{Recursive: true, Debounce: watchDebounceDefault * time.Millisecond}
	if req.Recursive != nil {
		cfg.Recursive = *req.Recursive
	}
	if d := req.Debounce; d != nil {
		if *d < watchDebounceMin || *d > watchDebounceMax {
			return cfg, httpkit.InvalidRequest("debounce must be between %d and %d ms, got %d", watchDebounceMin, watchDebounceMax, *d)
		}
		cfg.Debounce = time.Duration(*d) * time.Millisecond
	}
	if req.Exclude != nil {
		cfg.Exclude = append([]string{}, *req.Exclude...) // empty, not nil: no excludes
	}
	for _, list := range []struct {
		name string
		pats []string
	}{{"exclude", cfg.Exclude}, {"include_patterns", req.IncludePatterns}} {
		for _, p := range list.pats {
			if err := pathmatch.CheckGlob(strings.Trim(p, "/")); err != nil {
				return cfg, httpkit.InvalidRequest("%s: %v", list.name, err)
			}
		}
	}
	cfg.Include = req.IncludePatterns
	return cfg, nil
}

// WatchList: GET /v2/watch, GET /v1/file/watch — the live watchers.
func (s *Family) watchList(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	sb := s.watchFS(r.Context())
	infos := sb.Journal().Watchers()
	status := "active"
	if sb.Watch().Degraded() {
		status = "degraded" // the inotify limit: some directories unwatched
	}
	out := WatchList{Watchers: make([]WatchInfo, len(infos)), Count: len(infos)}
	for i, in := range infos {
		ex := in.Config.Exclude
		if ex == nil {
			ex = journal.DefaultExcludes
		}
		inc := in.Config.Include
		if inc == nil {
			inc = []string{}
		}
		out.Watchers[i] = WatchInfo{
			WatcherID:       in.Ref, // each client's own reference, as its create answered
			Path:            in.Config.Path,
			Status:          status,
			CreatedAt:       rfc3339(in.Created),
			Recursive:       in.Config.Recursive,
			Debounce:        in.Config.Debounce.Milliseconds(),
			Exclude:         ex,
			IncludePatterns: inc,
			Subscribers:     in.Refs,
		}
	}
	return writeAIO(w, out)
}

// watchPollV2: GET /v2/watch/{id}/poll?cursor&limit&timeout — long-poll;
// with Accept: text/event-stream, the SSE stream instead.
func (s *Family) watchPollV2(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	if wantsEventStream(r) {
		return s.serveWatchSSE(w, r, ps.ByName("id"), q)
	}
	var pr watchPollRequest
	for name, dst := range map[string]**int64{"cursor": &pr.Cursor, "limit": &pr.Limit, "timeout": &pr.Timeout} {
		if *dst, err = httpkit.IntQuery[int64](q, name, httpkit.AIODialect); err != nil {
			return err
		}
	}
	return s.poll(w, r, ps.ByName("id"), pr, PollLimitDefaultV2, pollLimitMaxV2)
}

// watchPollV1: POST /v1/file/watch/{id}/poll {cursor, limit, timeout}.
func (s *Family) watchPollV1(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	var pr watchPollRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &pr, true); err != nil {
		return err
	}
	return s.poll(w, r, ps.ByName("id"), pr, pollLimitDefaultV1, pollLimitMaxV1)
}

func (s *Family) poll(w http.ResponseWriter, r *http.Request, id string, pr watchPollRequest, defLimit, maxLimit int64) error {
	cursor, limit, timeout := int64(0), defLimit, int64(0)
	if pr.Cursor != nil {
		if cursor = *pr.Cursor; cursor < 0 {
			return httpkit.WithOp("watch_poll", httpkit.InvalidRequest("cursor must be 0 or more, got %d", cursor))
		}
	}
	if pr.Limit != nil {
		if limit = *pr.Limit; limit < 1 || limit > maxLimit {
			return httpkit.WithOp("watch_poll", httpkit.InvalidRequest("limit must be between 1 and %d, got %d", maxLimit, limit))
		}
	}
	if pr.Timeout != nil {
		if timeout = *pr.Timeout; timeout < 0 || timeout > pollTimeoutMax {
			return httpkit.WithOp("watch_poll", httpkit.InvalidRequest("timeout must be between 0 and %d s, got %d", pollTimeoutMax, timeout))
		}
	}
	wt, err := s.watchFS(r.Context()).Journal().Watcher(id)
	if err != nil {
		return httpkit.WithOp("watch_poll", unknownWatcher(id, err))
	}
	ctx, done := s.host.StreamContext(r.Context())
	defer done()
	b, err := wt.Poll(ctx, uint64(cursor), int(limit), time.Duration(timeout)*time.Second)
	if err != nil && (r.Context().Err() != nil || s.host.EndReason(r.Context()) == "") {
		return httpkit.WithOp("watch_poll", unknownWatcher(id, err))
	} // the daemon stops or the sandbox goes: answer what the poll has, as at its timeout
	return writeAIO(w, WatchBatch{
		Events:   wireEvents(b.Events, wt.Config().Path, s.watchesOf(r.Context()).isFile(id)),
		Cursor:   b.Cursor,
		Overflow: b.Overflow,
	})
}

// watchStop: DELETE /v2/watch/{id}, DELETE /v1/file/watch/{id} — release
// the reference a create answered (a second DELETE of it, or of the shared
// watcher's own id, is 404); the watcher stops at the last.
func (s *Family) watchStop(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	id := ps.ByName("id")
	left, err := s.watchFS(r.Context()).Journal().Release(id)
	if err != nil {
		return httpkit.WithOp("watch_stop", unknownWatcher(id, err))
	}
	status := "active"
	if left == 0 {
		status = "stopped"
		s.watchesOf(r.Context()).forget(id)
	}
	return writeAIO(w, WatchStopped{WatcherID: id, Status: status, Subscribers: left})
}

// watchWait: POST /v1/file/watch/wait {path, timeout, event_types} — the
// first event on exactly path (as the path, or as the old path of a
// rename) of one of the types, after the call begins; 503 on timeout.
func (s *Family) watchWait(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req watchWaitRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	if req.Path == nil {
		return httpkit.InvalidField("body.path", "missing", "Field required")
	}
	timeout := int64(waitTimeoutDefault)
	if req.Timeout != nil {
		if timeout = *req.Timeout; timeout < waitTimeoutMin || timeout > waitTimeoutMax {
			return httpkit.WithOp("watch_wait", httpkit.InvalidRequest("timeout must be between %d and %d s, got %d", waitTimeoutMin, waitTimeoutMax, timeout))
		}
	}
	types := map[journal.Type]bool{}
	for i, t := range req.EventTypes {
		switch typ := journal.Type(t); typ {
		case journal.Create, journal.Write, journal.Remove, journal.Rename, journal.Chmod:
			types[typ] = true
		default:
			return httpkit.InvalidField(fmt.Sprintf("body.event_types.%d", i), "enum",
				"Input should be 'create', 'write', 'remove', 'rename' or 'chmod', got %q", t)
		}
	}
	sb := s.watchFS(r.Context())
	p, err := sb.Clean(*req.Path)
	if err != nil {
		return httpkit.WithOp("watch_wait", err)
	}
	sub := sb.Journal().Subscribe(func(e journal.Event) bool {
		return (e.Path == p || e.OldPath == p) && (len(types) == 0 || types[e.Type])
	}, 16)
	defer sub.Close()
	t := time.NewTimer(time.Duration(timeout) * time.Second)
	defer t.Stop()
	ctx, done := s.host.StreamContext(r.Context())
	defer done()
	select {
	case e := <-sub.C:
		return writeAIO(w, wireEvent(e, p, true))
	case <-t.C:
		return httpkit.WithOp("watch_wait", &httpkit.RequestError{Kind: httpkit.KindTimeout, Status: http.StatusServiceUnavailable, Msg: fmt.Sprintf("no matching event on %s within %d s", p, timeout)})
	case <-ctx.Done():
		if r.Context().Err() == nil { // the daemon stops or the sandbox goes (rest/streams.go)
			return httpkit.WithOp("watch_wait", &httpkit.RequestError{Kind: httpkit.KindTimeout, Status: http.StatusServiceUnavailable, Msg: fmt.Sprintf("no matching event on %s: %s", p, s.host.EndReason(r.Context()))})
		}
		return r.Context().Err()
	}
}

// watchEvents: GET /v2/watch/{id}/events, GET /v1/file/watch/{id}/events
// ?cursor, Last-Event-ID — the SSE stream (watch_sse.go).
func (s *Family) watchEvents(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	return s.serveWatchSSE(w, r, ps.ByName("id"), q)
}

// unknownWatcher names the watcher in the error of a lookup that failed
// (unknown, or stopped while a poll waited).
func unknownWatcher(id string, err error) error {
	if errors.Is(err, journal.ErrUnknownWatcher) || errors.Is(err, journal.ErrWatcherClosed) {
		return fmt.Errorf("watcher %q: %w", id, err)
	}
	return err
}

func wantsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		if strings.Contains(strings.ToLower(v), "text/event-stream") {
			return true
		}
	}
	return false
}
