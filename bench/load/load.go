// Package load drives a running sandfs daemon with concurrent clients over
// all four route families, watchers of every kind and a process writing
// through the FUSE mount, for a bounded time, and checks what it did:
//
//   - no answer is a 5xx (nor a transport error);
//   - every acknowledged write reads back with the same SHA-256 (read through
//     a family other than the one that wrote it, while the load runs, and
//     again at the end for the files still there);
//   - every change is in the journal exactly once: a watcher made before the
//     load and read from cursor 0 by long-poll sees, for each acknowledged
//     new file, one create (or, for an upload, one rename onto it) and one
//     write, never an echo with origin external, and one remove for each
//     acknowledged delete, with no overflow.
//
// Each client writes new files under its own directory (/load/cNN), so each
// acknowledgement names one path and the expected events are exact; it
// keeps at most Window files, deleting the oldest (after reading it back),
// so a long run uses bounded disk. The FUSE writer is a separate sh process
// (the daemon must not open files on its own mount; the generator runs
// beside it, not in it): it writes /load/fuse/fN through the mount and
// prints "ok N" after each write closed without error.
//
// The integration test TestLoad runs it for about 20 s in make test and for
// SOAK (e.g. 10m) in make soak, and checks the daemon's fds, threads,
// goroutines and RSS around it.
package load

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"
)

// Config is one run.
type Config struct {
	URL      string        // the daemon, http://host:port
	Token    string        // sent as "Authorization: Bearer" ("" = none: a --no-auth daemon)
	Clients  int           // concurrent clients (default 64)
	Duration time.Duration // how long the clients run (default 20 s)
	Mount    string        // host path of the FUSE mount of sandbox "default"; "" = no FUSE writer
	Window   int           // files a client keeps before deleting its oldest (default 100)
	MaxBody  int           // largest file written, bytes (default 8 KiB)
	Logf     func(format string, args ...any)
}

// Report is what a run did and found. Failures lists every broken promise;
// an empty list is a pass.
type Report struct {
	Requests     int64            // HTTP requests of the clients
	ByFamily     map[string]int64 // requests per family
	Status5xx    int64
	Acked        int // acknowledged new files (API and FUSE)
	AckedFUSE    int
	Deleted      int // acknowledged deletes
	Verified     int // read-backs whose hash matched
	Events       int // events the journal checker read
	OtherWatch   map[string]int64
	Failures     []string
	failuresMu   sync.Mutex
	familyCounts sync.Map
}

func (r *Report) fail(format string, args ...any) {
	r.failuresMu.Lock()
	defer r.failuresMu.Unlock()
	if len(r.Failures) < 50 {
		r.Failures = append(r.Failures, fmt.Sprintf(format, args...))
	} else if len(r.Failures) == 50 {
		r.Failures = append(r.Failures, "… more failures left out")
	}
}

// ack is one acknowledged new file.
type ack struct {
	path   string
	sum    string
	upload bool // arrived by rename from an upload's .part
	fuse   bool
}

// Run drives the daemon at cfg.URL and checks it; see the package doc.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Clients <= 0 {
		cfg.Clients = 64
	}
	if cfg.Duration <= 0 {
		cfg.Duration = 20 * time.Second
	}
	if cfg.Window <= 0 {
		cfg.Window = 100
	}
	if cfg.MaxBody <= 0 {
		cfg.MaxBody = 8 << 10
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	g := &gen{cfg: cfg, rep: &Report{ByFamily: map[string]int64{}, OtherWatch: map[string]int64{}},
		hc: &http.Client{Transport: withToken(cfg.Token, &http.Transport{MaxIdleConnsPerHost: cfg.Clients + 16, DialContext: (&net.Dialer{}).DialContext})}}
	defer g.hc.CloseIdleConnections()

	// The journal checker's watcher exists before the first change.
	jw, err := g.createWatch("/v2/watch", `{"path":"/","recursive":true,"debounce":50}`)
	if err != nil {
		return nil, err
	}
	if _, err := g.do(ctx, "agent", "POST", "/v1/fs/mkdir?path=/load", nil, ""); err != nil {
		return nil, err
	}
	journal := newJournalReader(g, jw)
	jctx, jcancel := context.WithCancel(ctx)
	defer jcancel()
	var bg sync.WaitGroup
	bg.Add(1)
	go func() { defer bg.Done(); journal.run(jctx) }()

	// Other watchers: long-poll v1 and v2, SSE, the named websocket.
	wctx, wcancel := context.WithCancel(ctx)
	defer wcancel()
	var wwg sync.WaitGroup
	var otherMu sync.Mutex
	count := func(kind string, n int64) {
		otherMu.Lock()
		g.rep.OtherWatch[kind] += n
		otherMu.Unlock()
	}
	// Each is subscribed before the first change and reads until it has
	// told the end marker, so its count is of the whole run.
	kinds := []string{"poll-v2", "poll-v1", "sse", "websocket"}
	readyc := make(chan struct{}, len(kinds))
	ended := make(chan string, len(kinds))
	for _, kind := range kinds {
		wwg.Add(1)
		go func() {
			defer wwg.Done()
			w := &otherWatch{kind: kind, count: count, ready: sync.OnceFunc(func() { readyc <- struct{}{} })}
			defer w.ready()
			if g.watchOther(wctx, w) {
				ended <- kind
			}
		}()
	}
	for range kinds {
		select {
		case <-readyc:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}

	// The FUSE writer.
	var fuseAcks []ack
	var fuseWG sync.WaitGroup
	stopFile := ""
	if cfg.Mount != "" {
		if _, err := g.do(ctx, "agent", "POST", "/v1/fs/mkdir?path=/load/fuse", nil, ""); err != nil {
			return nil, err
		}
		dir, err := os.MkdirTemp("", "sandfs-load-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(dir)
		stopFile = filepath.Join(dir, "stop")
		defer os.WriteFile(stopFile, nil, 0o644) // on an early return too
		salt := strconv.FormatUint(rand.Uint64(), 16)
		cmd := exec.Command("sh", "-c", `i=0
while [ ! -e "$1" ]; do
  i=$((i+1))
  printf 'fuse %d %s\n' "$i" "$3" > "$2/f$i" && echo "ok $i"
  if [ $((i % 20)) -eq 0 ]; then sleep 0.05; fi
done
exit 0`, "sh", stopFile, filepath.Join(cfg.Mount, "load", "fuse"), salt)
		out, err := cmd.StdoutPipe()
		if err != nil {
			return nil, err
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		fuseWG.Add(1)
		go func() {
			defer fuseWG.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				n, ok := strings.CutPrefix(sc.Text(), "ok ")
				if !ok {
					continue
				}
				fuseAcks = append(fuseAcks, ack{path: "/load/fuse/f" + n, sum: sum([]byte("fuse " + n + " " + salt + "\n")), fuse: true})
			}
			if err := cmd.Wait(); err != nil || stderr.Len() > 0 {
				g.rep.fail("FUSE writer: %v: %s", err, stderr.String())
			}
		}()
	}

	// The clients.
	lctx, lcancel := context.WithTimeout(ctx, cfg.Duration)
	defer lcancel()
	acks := make([][]ack, cfg.Clients)
	deleted := make([][]string, cfg.Clients)
	var cwg sync.WaitGroup
	for i := 0; i < cfg.Clients; i++ {
		cwg.Add(1)
		go func() {
			defer cwg.Done()
			acks[i], deleted[i] = g.client(lctx, ctx, i)
		}()
	}
	cwg.Wait()
	lcancel()
	if stopFile != "" {
		os.WriteFile(stopFile, nil, 0o644)
		fuseWG.Wait()
	}
	cfg.Logf("load: clients done after %d requests; draining the journal", g.requests.Load())

	// A marker write ends the journal: once its event is read, every
	// acknowledged change before it has been told.
	if _, err := g.do(ctx, "agent", "PUT", "/v1/fs/file?path="+endMarker, strings.NewReader("end"), ""); err != nil {
		return nil, err
	}
	if !journal.waitFor(ctx, endMarker, 60*time.Second) {
		g.rep.fail("journal: the end marker's event never arrived")
	}
	jcancel()
	bg.Wait()
	for waiting, limit := len(kinds), time.After(60*time.Second); waiting > 0; waiting-- {
		select {
		case <-ended:
		case <-limit:
			g.rep.fail("%d of the other watchers never told the end marker", waiting)
			waiting = 1
		}
	}
	wcancel()
	wwg.Wait()

	// Final read-back of every file still there, and the journal check.
	var all []ack
	gone := map[string]bool{}
	for i := range acks {
		all = append(all, acks[i]...)
		for _, p := range deleted[i] {
			gone[p] = true
		}
	}
	all = append(all, fuseAcks...)
	for _, a := range all {
		if gone[a.path] {
			continue
		}
		b, err := g.do(ctx, "agent", "GET", "/v1/fs/file?path="+url.QueryEscape(a.path), nil, "")
		switch {
		case err != nil:
			g.rep.fail("final read %s: %v", a.path, err)
		case sum(b) != a.sum:
			g.rep.fail("final read %s: hash %s, acknowledged %s", a.path, sum(b)[:12], a.sum[:12])
		default:
			g.verified.Add(1)
		}
	}
	journal.check(g.rep, all, gone)

	r := g.rep
	r.Requests = g.requests.Load()
	r.Status5xx = g.status5xx.Load()
	r.Acked = len(all)
	r.AckedFUSE = len(fuseAcks)
	r.Deleted = len(gone)
	r.Verified = int(g.verified.Load())
	r.Events = journal.n
	r.familyCounts.Range(func(k, v any) bool { r.ByFamily[k.(string)] = v.(*atomic.Int64).Load(); return true })
	return r, nil
}

// gen is the state the clients share.
type gen struct {
	cfg       Config
	rep       *Report
	hc        *http.Client
	requests  atomic.Int64
	status5xx atomic.Int64
	verified  atomic.Int64
}

func sum(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }

// do sends one request and returns the body of a 2xx answer (an AIO
// envelope with success:false is an error too). A 5xx is counted and failed.
func (g *gen) do(ctx context.Context, family, method, route string, body io.Reader, ctype string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, g.cfg.URL+route, body)
	if err != nil {
		return nil, err
	}
	if ctype != "" {
		req.Header.Set("Content-Type", ctype)
	}
	g.requests.Add(1)
	v, _ := g.rep.familyCounts.LoadOrStore(family, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	resp, err := g.hc.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			g.rep.fail("%s %s: %v", method, route, err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if resp.StatusCode >= 500 {
		g.status5xx.Add(1)
		g.rep.fail("%s %s: %s: %.200s", method, route, resp.Status, b)
	}
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("%s %s: %s: %.200s", method, route, resp.Status, b)
	}
	if strings.HasPrefix(family, "aio") && bytes.HasPrefix(b, []byte(`{"success":false`)) {
		return nil, fmt.Errorf("%s %s: %.200s", method, route, b)
	}
	return b, nil
}

// client runs one client until stop ends and returns its acknowledged files
// and its acknowledged deletes. Its requests run under ctx, so the one in
// flight when stop ends completes and is acknowledged or refused.
func (g *gen) client(stop, ctx context.Context, id int) (acks []ack, deleted []string) {
	dir := fmt.Sprintf("/load/c%02d", id)
	if _, err := g.do(ctx, "agent", "POST", "/v1/fs/mkdir?path="+dir, nil, ""); err != nil {
		g.rep.fail("mkdir %s: %v", dir, err)
		return nil, nil
	}
	rng := rand.New(rand.NewPCG(uint64(id), uint64(time.Now().UnixNano())))
	var live []ack
	for n := 0; stop.Err() == nil; n++ {
		switch op := rng.IntN(10); {
		case op < 5: // a new file through one of six writers
			content := make([]byte, rng.IntN(g.cfg.MaxBody+1))
			for i := range content {
				content[i] = 'a' + byte(rng.IntN(26)) // text: the AIO JSON writes take UTF-8
			}
			p := fmt.Sprintf("%s/w%06d", dir, n)
			a, err := g.write(ctx, rng.IntN(6), p, content)
			if err != nil {
				if ctx.Err() == nil {
					g.rep.fail("write %s: %v", p, err)
				}
				continue
			}
			acks = append(acks, a)
			live = append(live, a)
		case op < 8 && len(live) > 0: // read back a live file through another family
			a := live[rng.IntN(len(live))]
			b, err := g.read(ctx, rng.IntN(4), a.path)
			if err != nil {
				if ctx.Err() == nil {
					g.rep.fail("read %s: %v", a.path, err)
				}
				continue
			}
			if sum(b) != a.sum {
				g.rep.fail("read %s: hash %s, acknowledged %s", a.path, sum(b)[:12], a.sum[:12])
			} else {
				g.verified.Add(1)
			}
		default: // list or stat
			switch rng.IntN(4) {
			case 0:
				g.do(ctx, "agent", "GET", "/v1/fs/entries?path="+dir, nil, "")
			case 1:
				g.do(ctx, "aio-v2", "GET", "/v2/fs/list?path="+dir, nil, "")
			case 2:
				g.do(ctx, "aio-v1", "POST", "/v1/file/list", strings.NewReader(`{"path":"`+dir+`"}`), "application/json")
			case 3:
				g.do(ctx, "named", "GET", "/v1/sandboxes/default/fs/list?path="+dir, nil, "")
			}
		}
		for len(live) > g.cfg.Window { // bounded disk: drop the oldest
			a := live[0]
			if err := g.remove(ctx, rng.IntN(4), a.path); err != nil {
				if ctx.Err() == nil {
					g.rep.fail("delete %s: %v", a.path, err)
				}
				break
			}
			deleted = append(deleted, a.path)
			live = live[1:]
		}
	}
	return acks, deleted
}

// write makes the new file p through writer w (0-5) and returns its ack.
func (g *gen) write(ctx context.Context, w int, p string, content []byte) (ack, error) {
	a := ack{path: p, sum: sum(content)}
	q := url.QueryEscape(p)
	var err error
	switch w {
	case 0:
		_, err = g.do(ctx, "agent", "PUT", "/v1/fs/file?path="+q, bytes.NewReader(content), "")
	case 1:
		b, _ := json.Marshal(map[string]string{"path": p, "content": string(content)})
		_, err = g.do(ctx, "aio-v2", "POST", "/v2/fs/write", bytes.NewReader(b), "application/json")
	case 2:
		b, _ := json.Marshal(map[string]string{"file": p, "content": string(content)})
		_, err = g.do(ctx, "aio-v1", "POST", "/v1/file/write", bytes.NewReader(b), "application/json")
	case 3, 4:
		route, fam := "/v2/fs/upload", "aio-v2"
		if w == 4 {
			route, fam = "/v1/file/upload", "aio-v1"
		}
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		mw.WriteField("path", p)
		fw, _ := mw.CreateFormFile("file", "x")
		fw.Write(content)
		mw.Close()
		_, err = g.do(ctx, fam, "POST", route, &body, mw.FormDataContentType())
		a.upload = true
	case 5:
		_, err = g.do(ctx, "named", "PUT", "/v1/sandboxes/default/fs/write?path="+q, bytes.NewReader(content), "")
	}
	return a, err
}

// read returns the bytes of p through reader r (0-3).
func (g *gen) read(ctx context.Context, r int, p string) ([]byte, error) {
	q := url.QueryEscape(p)
	switch r {
	case 0:
		return g.do(ctx, "agent", "GET", "/v1/fs/file?path="+q, nil, "")
	case 1:
		return g.do(ctx, "aio-v2", "GET", "/v2/fs/download?path="+q, nil, "")
	case 2:
		b, err := g.do(ctx, "aio-v2", "GET", "/v2/fs/read?path="+q, nil, "")
		if err != nil {
			return nil, err
		}
		var out struct {
			Data struct {
				Content string `json:"content"`
			} `json:"data"`
		}
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, err
		}
		return []byte(out.Data.Content), nil
	default:
		return g.do(ctx, "named", "GET", "/v1/sandboxes/default/fs/read?path="+q, nil, "")
	}
}

// remove deletes p through family f (0-3).
func (g *gen) remove(ctx context.Context, f int, p string) error {
	var err error
	switch f {
	case 0:
		_, err = g.do(ctx, "agent", "DELETE", "/v1/fs/entry?path="+url.QueryEscape(p), nil, "")
	case 1:
		_, err = g.do(ctx, "aio-v2", "POST", "/v2/fs/delete", strings.NewReader(`{"path":"`+p+`"}`), "application/json")
	case 2:
		_, err = g.do(ctx, "aio-v1", "POST", "/v1/file/delete", strings.NewReader(`{"path":"`+p+`"}`), "application/json")
	default:
		_, err = g.do(ctx, "named", "DELETE", "/v1/sandboxes/default/fs/delete?path="+url.QueryEscape(p), nil, "")
	}
	return err
}

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
	hc := &http.Client{Transport: withToken(g.cfg.Token, http.DefaultTransport)}
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

// journalReader long-polls one watcher from cursor 0 and keeps every event.
type journalReader struct {
	g        *gen
	id       string
	mu       sync.Mutex
	events   []event
	n        int
	overflow bool
	seen     map[string]bool
}

type event struct {
	Seq     uint64 `json:"seq"`
	Type    string `json:"type"`
	Path    string `json:"path"`
	OldPath string `json:"old_path"`
	IsDir   bool   `json:"is_dir"`
	Origin  string `json:"origin"`
}

func newJournalReader(g *gen, id string) *journalReader {
	return &journalReader{g: g, id: id, seen: map[string]bool{}}
}

func (j *journalReader) run(ctx context.Context) {
	hc := &http.Client{Transport: withToken(j.g.cfg.Token, http.DefaultTransport)}
	cursor := uint64(0)
	for ctx.Err() == nil {
		out, err := j.g.poll(ctx, hc, false, j.id, cursor)
		if err != nil {
			if ctx.Err() == nil {
				j.g.rep.fail("journal poll: %v", err)
			}
			return
		}
		j.mu.Lock()
		if out.Data.Overflow {
			j.overflow = true
		}
		for _, e := range out.Data.Events {
			j.events = append(j.events, e)
			j.seen[e.Path] = true
		}
		j.n = len(j.events)
		j.mu.Unlock()
		cursor = out.Data.Cursor
	}
}

// waitFor waits until an event on path was read.
func (j *journalReader) waitFor(ctx context.Context, path string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		j.mu.Lock()
		ok := j.seen[path]
		j.mu.Unlock()
		if ok {
			return true
		}
		time.Sleep(50 * time.Millisecond)
	}
	return false
}

// check holds the journal to exactly once for every acknowledged change.
func (j *journalReader) check(rep *Report, acks []ack, gone map[string]bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.overflow {
		rep.fail("journal: the checker's watcher overflowed; exactly-once cannot be judged")
	}
	type counts struct{ create, write, rename, remove, external int }
	by := map[string]*counts{}
	get := func(p string) *counts {
		c := by[p]
		if c == nil {
			c = &counts{}
			by[p] = c
		}
		return c
	}
	for _, e := range j.events {
		if e.IsDir || !strings.HasPrefix(e.Path, "/load/") {
			continue
		}
		c := get(e.Path)
		if e.Origin == "external" {
			c.external++
		}
		switch e.Type {
		case "create":
			c.create++
		case "write":
			c.write++
		case "rename":
			c.rename++
		case "remove":
			c.remove++
		}
	}
	known := map[string]bool{"/load/end-marker": true}
	bad := 0
	for _, a := range acks {
		known[a.path] = true
		c := get(a.path)
		want := counts{create: 1, write: 1}
		if a.upload {
			want = counts{rename: 1}
		}
		if gone[a.path] {
			want.remove = 1
		}
		if *c != want {
			bad++
			if bad <= 10 {
				rep.fail("journal: %s (upload=%v fuse=%v): got %+v, want %+v", a.path, a.upload, a.fuse, *c, want)
			}
		}
	}
	var stray []string
	for p := range by {
		if !known[p] && !strings.Contains(p, "/.sandfs-") {
			stray = append(stray, p)
		}
	}
	sort.Strings(stray)
	if bad > 10 {
		rep.fail("journal: %d acknowledged changes in all not told exactly once", bad)
	}
	if len(stray) > 0 {
		rep.fail("journal: %d events on paths nobody acknowledged writing, e.g. %q", len(stray), stray[:min(5, len(stray))])
	}
}

// withToken makes rt send "Authorization: Bearer token" (token "" = rt).
func withToken(token string, rt http.RoundTripper) http.RoundTripper {
	if token == "" {
		return rt
	}
	return tokenRT{token: token, rt: rt}
}

type tokenRT struct {
	token string
	rt    http.RoundTripper
}

func (t tokenRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.token)
	return t.rt.RoundTrip(r)
}

func (t tokenRT) CloseIdleConnections() {
	if c, ok := t.rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// authHeader is the websocket handshake's header for token.
func authHeader(token string) http.Header {
	if token == "" {
		return nil
	}
	return http.Header{"Authorization": {"Bearer " + token}}
}
