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
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
		hc: &http.Client{Transport: WithToken(cfg.Token, &http.Transport{MaxIdleConnsPerHost: cfg.Clients + 16, DialContext: (&net.Dialer{}).DialContext})}}
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
