package named

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
	"github.com/julienschmidt/httprouter"

	"sandfs/core/journal"
	"sandfs/rest/httpkit"
)

const (
	// MaxSocketPaths is how many paths one watch socket follows (api.md §5).
	MaxSocketPaths = 8
	// socketQueue is the per-socket event queue; a reader slower than the
	// journal loses what does not fit and is told how many.
	socketQueue = 256
	// MaxSocketMessage bounds a client message (a subscription).
	MaxSocketMessage = 64 << 10
)

// wsSubscribe is a client message on the watch socket.
type wsSubscribe struct {
	Type       string   `json:"type"`
	Paths      []string `json:"paths"`
	Recursive  bool     `json:"recursive"`
	WorkingDir string   `json:"workingDir"`
	// sandfs's own: replay the journal's events after this seq under the
	// paths first (a cursor from an event's seq, kept across restarts).
	Since *uint64 `json:"since,omitempty"`
}

// wsReplay asks the sending loop to replay the journal after since under
// paths, before it sends more live events.
type wsReplay struct {
	since, through uint64 // replayed: the events in (since, through]
	paths          []wsPath
}

type wsSubscribed struct {
	Type  string   `json:"type"` // "subscribed"
	Paths []string `json:"paths"`
}

type WSEvent struct {
	Type      string `json:"type"` // "event"
	Path      string `json:"path"`
	Event     string `json:"event"`
	Timestamp string `json:"timestamp"`
	IsDir     bool   `json:"isDir"`
	Size      int64  `json:"size"`
	// sandfs's own, after the seed's fields: who made the change (api.md
	// §6): the name an API client gave, for a fuse change the calling
	// process, its command name and cgroup; a rename's old path.
	Origin  string  `json:"origin,omitempty"`
	Actor   string  `json:"actor,omitempty"`
	Pid     *uint32 `json:"pid,omitempty"`
	Comm    string  `json:"comm,omitempty"`
	Cgroup  string  `json:"cgroup,omitempty"`
	OldPath string  `json:"oldPath,omitempty"`
	Seq     uint64  `json:"seq,omitempty"` // the event's place in the journal: a subscribe's since
	// FoundAtStart: an outside change made while the daemon was down.
	FoundAtStart bool `json:"foundAtStart,omitempty"`
}

type wsError struct {
	Type    string `json:"type"` // "error"
	Message string `json:"message"`
}

// wsPath is one followed path: an exact API path, with everything under it
// when recursive, else with its direct entries.
type wsPath struct {
	path      string
	recursive bool
}

func (p wsPath) covers(ev string) bool { return journal.Covers(ev, p.path, p.recursive) }

// namedWatch: GET /fs/watch (websocket). The browser guard and auth were
// checked on the upgrade request (Origin; header or access_token/api_key
// query), before any upgrade. The socket takes
// subscribe messages and sends one event message per journal event under
// the paths followed.
func (s *Family) namedWatch(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb := s.sandbox(r)
	c := &httpkit.RefusalCatcher{ResponseWriter: w}
	conn, err := websocket.Accept(c, r, &websocket.AcceptOptions{
		// The route wrapper's browser guard (rest/browser.go) has already
		// refused a handshake from a page of another origin unless
		// --allow-origin names it, and checks Origin the same way as for
		// every route; the library's own check (Origin host = Host, with
		// host patterns) would refuse an allowed origin.
		InsecureSkipVerify: true,
	})
	if err != nil {
		if refused := c.Refusal(); refused != nil {
			return refused // a failed handshake, in the family's shape
		}
		return nil
	}
	conn.SetReadLimit(MaxSocketMessage)
	// stop ends with the daemon (rest/streams.go); ctx, which the reads wait
	// under, only with the client, so the close frame goes out first.
	stop, done := s.host.StreamContext(r.Context())
	defer done()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()

	var paths atomic.Pointer[[]wsPath]
	paths.Store(&[]wsPath{})
	sub := sb.Journal().Subscribe(func(e journal.Event) bool {
		for _, p := range *paths.Load() {
			if p.covers(e.Path) {
				return true
			}
		}
		return false
	}, socketQueue)
	defer sub.Close()

	replays := make(chan wsReplay)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cancel()
		for {
			_, data, err := conn.Read(ctx)
			if err != nil {
				return
			}
			reply, replay := s.wsHandle(sb, data, &paths)
			if wsWrite(ctx, conn, reply) != nil {
				return
			}
			if replay != nil {
				select {
				case replays <- *replay:
				case <-ctx.Done():
					return
				}
			}
		}
	}()

	var replayed wsReplay // live events a replay already sent
	for err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-stop.Done():
			err = stop.Err()
		case rq := <-replays:
			replayed, err = replaySocket(ctx, conn, sb.Journal(), rq)
		case e, ok := <-sub.C:
			if !ok {
				err = context.Canceled
				break
			}
			if e.Seq > replayed.since && e.Seq <= replayed.through && coveredBy(replayed.paths, e.Path) {
				continue
			}
			if n := sub.TakeDropped(); n > 0 {
				if err = wsWrite(ctx, conn, wsError{"error", fmt.Sprintf("dropped %d events", n)}); err != nil {
					break
				}
			}
			err = wsWrite(ctx, conn, SocketEvent(e))
			if err == nil && len(sub.C) == 0 {
				if n := sub.TakeDropped(); n > 0 {
					err = wsWrite(ctx, conn, wsError{"error", fmt.Sprintf("dropped %d events", n)})
				}
			}
		}
	}
	if reason := s.host.EndReason(r.Context()); ctx.Err() == nil && reason != "" {
		conn.Close(websocket.StatusGoingAway, reason)
	}
	cancel()
	conn.Close(websocket.StatusNormalClosure, "")
	wg.Wait()
	return nil
}

// replaySocket sends the journal's events after rq.since under rq.paths,
// up to the journal's seq now, led by the dropped message when some are no
// longer kept; it returns what it covered, for the live loop to skip.
func replaySocket(ctx context.Context, conn *websocket.Conn, j *journal.Journal, rq wsReplay) (wsReplay, error) {
	top := j.Seq()
	if oldest := j.Oldest(); rq.since+1 < oldest {
		if err := wsWrite(ctx, conn, wsError{"error", fmt.Sprintf("dropped %d events", oldest-1-rq.since)}); err != nil {
			return wsReplay{}, err
		}
	}
	var werr error
	_, err := j.Scan(ctx, rq.since, func(e journal.Event) bool {
		if e.Seq > top {
			return false
		}
		if e, ok := journal.Reportable(e); ok && coveredBy(rq.paths, e.Path) {
			werr = wsWrite(ctx, conn, SocketEvent(e))
		}
		return werr == nil
	})
	if werr != nil {
		err = werr
	}
	rq.through = top
	return rq, err
}

func coveredBy(paths []wsPath, p string) bool {
	for _, wp := range paths {
		if wp.covers(p) {
			return true
		}
	}
	return false
}

// wsHandle answers one client message, and says what to replay when it
// asks for a replay.
func (s *Family) wsHandle(sb namedFS, data []byte, paths *atomic.Pointer[[]wsPath]) (any, *wsReplay) {
	var m wsSubscribe
	if err := json.Unmarshal(data, &m); err != nil {
		return wsError{"error", "message is not a JSON object: " + err.Error()}, nil
	}
	if m.Type != "subscribe" {
		return wsError{"error", fmt.Sprintf("unknown message type %q; want \"subscribe\"", m.Type)}, nil
	}
	if len(m.Paths) == 0 {
		return wsError{"error", "subscribe needs at least one path"}, nil
	}
	cur := *paths.Load()
	next := append([]wsPath(nil), cur...)
	var added []string
	for _, raw := range m.Paths {
		p, err := namedPath(sb, m.WorkingDir, raw, true)
		if err != nil {
			return wsError{"error", httpkit.Classify(err).Detail}, nil
		}
		wp := wsPath{p, m.Recursive}
		dup := false
		for i, q := range next {
			if q.path == p {
				next[i].recursive = q.recursive || m.Recursive
				dup = true
			}
		}
		if !dup {
			next = append(next, wp)
		}
		added = append(added, p)
	}
	if len(next) > MaxSocketPaths {
		return wsError{"error", fmt.Sprintf("too many paths: one socket follows at most %d (%d already)", MaxSocketPaths, len(cur))}, nil
	}
	paths.Store(&next)
	var replay *wsReplay
	if m.Since != nil {
		replay = &wsReplay{since: *m.Since}
		for _, p := range added {
			replay.paths = append(replay.paths, wsPath{p, m.Recursive})
		}
	}
	return wsSubscribed{Type: "subscribed", Paths: added}, replay
}

// SocketEvent is e as a watch socket sends it.
func SocketEvent(e journal.Event) WSEvent {
	out := WSEvent{Type: "event", Path: e.Path, Event: string(e.Type),
		Timestamp: e.Time.UTC().Format(time.RFC3339Nano), IsDir: e.IsDir, Size: e.Size,
		Origin: string(e.Origin), Actor: e.Actor, Comm: e.Comm, Cgroup: e.Cgroup, OldPath: e.OldPath, Seq: e.Seq, FoundAtStart: e.FoundAtStart}
	if e.Origin == journal.Mirror {
		pid := e.Pid
		out.Pid = &pid
	}
	return out
}

func wsWrite(ctx context.Context, conn *websocket.Conn, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return conn.Write(ctx, websocket.MessageText, b)
}
