package load

// The other watchers (long-poll v1 and v2, SSE, websocket), which count
// what they are told until the end marker.

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/coder/websocket"
)

// createWatch makes a watcher through route and returns its id.
func (g *gen) createWatch(route, body string) (string, error) {
	b, err := g.do(context.Background(), "watch", "POST", route, strings.NewReader(body), "application/json")
	if err != nil {
		return "", err
	}
	var out struct {
		Data struct {
			WatcherID string `json:"watcher_id"`
		} `json:"data"`
	}
	if err := json.Unmarshal(b, &out); err != nil || out.Data.WatcherID == "" {
		return "", fmt.Errorf("watch create: %s", b)
	}
	return out.Data.WatcherID, nil
}

// endMarker is the path of the write that ends the run's journal.
const endMarker = "/load/end-marker"

// otherWatch is one of the other watchers: its kind, the counter of the
// events it told, and ready, called once it is subscribed.
type otherWatch struct {
	kind  string
	count func(string, int64)
	ready func()
}

// watchOther runs one watcher until it tells the end marker (true) or ctx
// ends, counting the events it receives; an overflow or an error is a
// failure.
func (g *gen) watchOther(ctx context.Context, w *otherWatch) bool {
	hc := &http.Client{Transport: WithToken(g.cfg.Token, http.DefaultTransport)}
	kind := w.kind
	switch kind {
	case "poll-v2", "poll-v1", "sse":
		route := "/v2/watch"
		if kind == "poll-v1" {
			route = "/v1/file/watch"
		}
		id, err := g.createWatch(route, `{"path":"/load","recursive":true,"debounce":100}`)
		if err != nil {
			g.rep.fail("%s watcher: %v", kind, err)
			return false
		}
		w.ready() // the watcher's cursor starts at its creation
		if kind == "sse" {
			return g.sse(ctx, hc, id, w.count)
		}
		cursor := uint64(0)
		for ctx.Err() == nil {
			out, err := g.poll(ctx, hc, kind == "poll-v1", id, cursor)
			if err != nil {
				if ctx.Err() == nil {
					g.rep.fail("%s: %v", kind, err)
				}
				return false
			}
			if out.Data.Overflow {
				g.rep.fail("%s: overflow", kind)
			}
			cursor = out.Data.Cursor
			w.count(kind, int64(len(out.Data.Events)))
			for _, e := range out.Data.Events {
				if e.Path == endMarker {
					return true
				}
			}
		}
	case "websocket":
		u := "ws" + strings.TrimPrefix(g.cfg.URL, "http") + "/v1/sandboxes/default/fs/watch"
		c, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: authHeader(g.cfg.Token)})
		if err != nil {
			g.rep.fail("websocket: %v", err)
			return false
		}
		defer c.CloseNow()
		c.SetReadLimit(1 << 20)
		if err := c.Write(ctx, websocket.MessageText, []byte(`{"type":"subscribe","paths":["/load"],"recursive":true}`)); err != nil {
			g.rep.fail("websocket subscribe: %v", err)
			return false
		}
		for {
			_, b, err := c.Read(ctx)
			if err != nil {
				if ctx.Err() == nil {
					g.rep.fail("websocket: %v", err)
				}
				return false
			}
			var m struct{ Type, Path string }
			json.Unmarshal(b, &m)
			switch m.Type {
			case "subscribed":
				w.ready() // live only: events from here on
			case "event":
				w.count(kind, 1)
				if m.Path == endMarker {
					return true
				}
			case "error":
				// A socket reader slower than the journal is told what it
				// lost (a queue of 256); that is the contract, not a fault.
				w.count("websocket-lost-notices", 1)
			}
		}
	}
	return false
}

// sse reads the SSE stream of watcher id until it tells the end marker.
func (g *gen) sse(ctx context.Context, hc *http.Client, id string, count func(string, int64)) bool {
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v2/watch/%s/events?cursor=0", g.cfg.URL, id), nil)
	resp, err := hc.Do(req)
	if err != nil {
		g.rep.fail("sse: %v", err)
		return false
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		g.rep.fail("sse: %s", resp.Status)
		return false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "event: file_change":
			count("sse", 1)
		case line == "event: overflow":
			g.rep.fail("sse: overflow")
		case strings.HasPrefix(line, "data: "):
			var e event
			if json.Unmarshal([]byte(line[len("data: "):]), &e) == nil && e.Path == endMarker {
				return true
			}
		}
	}
	if err := sc.Err(); err != nil && ctx.Err() == nil {
		g.rep.fail("sse: %v", err)
	}
	return false
}

// pollAnswer is one long-poll answer of a watcher.
type pollAnswer struct {
	Data struct {
		Events   []event `json:"events"`
		Cursor   uint64  `json:"cursor"`
		Overflow bool    `json:"overflow"`
	} `json:"data"`
}

// poll asks watcher id for its events after cursor, waiting up to 1 s:
// GET /v2/watch/{id}/poll, or (v1) POST /v1/file/watch/{id}/poll. A 5xx is
// counted; any answer but 200 is an error.
func (g *gen) poll(ctx context.Context, hc *http.Client, v1 bool, id string, cursor uint64) (*pollAnswer, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/v2/watch/%s/poll?cursor=%d&timeout=1&limit=10000", g.cfg.URL, id, cursor), nil)
	if v1 {
		req, _ = http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("%s/v1/file/watch/%s/poll", g.cfg.URL, id),
			strings.NewReader(fmt.Sprintf(`{"cursor":%d,"timeout":1,"limit":1000}`, cursor)))
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		g.status5xx.Add(1)
	}
	var out pollAnswer
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %v", resp.Status, err)
	}
	return &out, nil
}
