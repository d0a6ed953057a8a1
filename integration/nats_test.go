package integration

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sandfs/natsout"
	"sandfs/natsout/natstest"
)

// The JetStream tests: daemons with --events and --mount, a
// real nats-server in this process (natstest), and the three ways a file
// changes: the API, the mount (written from this process, which is not the
// one serving it) and outside (the root itself, told by the kernel watch).

// natsPut writes one file through the API and says how long it took.
func natsPut(d *Daemon, p string) (time.Duration, error) {
	req, err := http.NewRequest("PUT", d.URL+"/v1/fs/file?path="+url.QueryEscape(p), strings.NewReader("body of "+p))
	if err != nil {
		return 0, err
	}
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	took := time.Since(start)
	if err != nil {
		return took, err
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return took, fmt.Errorf("PUT %s: %s", p, resp.Status)
	}
	return took, nil
}

// natsHost is one daemon of the fleet: --events to the broker as host,
// its sandbox "default" mounted at mnt.
type natsHost struct {
	name, root, mnt, state string
	args                   []string
	d                      *Daemon
}

func startNATSHost(t *testing.T, b *natstest.Broker, name string) *natsHost {
	t.Helper()
	requireFUSE(t)
	h := &natsHost{name: name, root: t.TempDir(), mnt: t.TempDir(), state: t.TempDir()}
	h.args = []string{"--root", h.root, "--state", h.state, "--mount", h.mnt, "--events", b.URL(), "--events-host", name}
	h.start(t)
	return h
}

// start runs the daemon (again, after a kill: it clears the stale mount).
func (h *natsHost) start(t *testing.T) {
	t.Helper()
	h.d = startDaemon(t, h.args...)
	if !mounted(t, h.mnt) {
		t.Fatalf("%s: daemon ready but %s is not mounted:\n%s", h.name, h.mnt, h.d.Log())
	}
}

// burst writes files to one host the three ways at once, each way in a
// goroutine of its own, until it has written n files, stop is closed, or
// a write fails. Names are "/<tag>-<way><i>".
type burst struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	paths   map[string][]string // way → paths written (the call returned success)
	slowest map[string]time.Duration
	errs    []error
}

var burstWays = []string{"api", "mount", "outside"}

func startBurst(h *natsHost, tag string, n int) *burst {
	bu := &burst{stop: make(chan struct{}), paths: map[string][]string{}, slowest: map[string]time.Duration{}}
	for _, way := range burstWays {
		bu.wg.Add(1)
		go func() {
			defer bu.wg.Done()
			for i := 0; i < n; i++ {
				if !bu.turn(i) {
					return
				}
				p := fmt.Sprintf("/%s-%s%d", tag, way, i)
				start := time.Now()
				var err error
				switch way {
				case "api":
					_, err = natsPut(h.d, p)
				case "mount":
					err = os.WriteFile(filepath.Join(h.mnt, p), []byte("mount "+p), 0o644)
				case "outside":
					err = os.WriteFile(filepath.Join(h.root, p), []byte("outside "+p), 0o644)
				}
				took := time.Since(start)
				bu.mu.Lock()
				if err != nil {
					bu.errs = append(bu.errs, fmt.Errorf("%s %s %s: %w", h.name, way, p, err))
					bu.mu.Unlock()
					return
				}
				bu.paths[way] = append(bu.paths[way], p)
				bu.slowest[way] = max(bu.slowest[way], took)
				bu.mu.Unlock()
			}
		}()
	}
	return bu
}

// turn waits until the way about to write its file i is no more than a
// few files ahead of the slowest way (outside writes are much faster than
// the others: the three stay interleaved), and says whether to go on: not
// once stop is closed or a way failed.
func (bu *burst) turn(i int) bool {
	for {
		select {
		case <-bu.stop:
			return false
		default:
		}
		bu.mu.Lock()
		slowest, failed := i, len(bu.errs) > 0
		for _, way := range burstWays {
			slowest = min(slowest, len(bu.paths[way]))
		}
		bu.mu.Unlock()
		if failed {
			return false
		}
		if i <= slowest+4 {
			return true
		}
		time.Sleep(time.Millisecond)
	}
}

// wait ends the burst (closing stop when end) and returns its errors.
func (bu *burst) wait(end bool) []error {
	if end {
		close(bu.stop)
	}
	bu.wg.Wait()
	return bu.errs
}

func (bu *burst) count(way string) int {
	bu.mu.Lock()
	defer bu.mu.Unlock()
	return len(bu.paths[way])
}

// keptEvents is every event the daemon's journal keeps, as the named
// family tells them, page by page.
func keptEvents(t *testing.T, d *Daemon) []natsout.Message {
	t.Helper()
	var out []natsout.Message
	for since := uint64(0); ; {
		var page struct {
			Events []natsout.Message `json:"events"`
			Cursor uint64            `json:"cursor"`
			More   bool              `json:"more"`
		}
		resp, err := http.Get(d.URL + "/v1/sandboxes/default/events?limit=10000&since=" + strconv.FormatUint(since, 10))
		must(t, err)
		err = json.NewDecoder(resp.Body).Decode(&page)
		resp.Body.Close()
		must(t, err)
		out = append(out, page.Events...)
		if !page.More {
			return out
		}
		since = page.Cursor
	}
}

// settle waits until h's journal tells every path of the bursts (the
// outside writes reach it through the kernel watch, later than the call)
// and then tells nothing new for half a second (a late write event of a
// file), and returns the events it keeps. Each way must have events of its
// origin.
func settle(t *testing.T, h *natsHost, bursts ...*burst) []natsout.Message {
	t.Helper()
	want := map[string]string{} // path → way
	for _, bu := range bursts {
		for way, ps := range bu.paths {
			for _, p := range ps {
				want[p] = way
			}
		}
	}
	var events []natsout.Message
	missing := func() []string {
		events = keptEvents(t, h.d)
		seen := map[string]bool{}
		for _, e := range events {
			seen[e.Path] = true
		}
		var m []string
		for p := range want {
			if !seen[p] {
				m = append(m, p)
			}
		}
		return m
	}
	if !waitFor(30*time.Second, func() bool { return len(missing()) == 0 }) {
		m := missing()
		t.Fatalf("%s: %d written files the journal never told, e.g. %v", h.name, len(m), m[:min(5, len(m))])
	}
	for n := -1; n != len(events); {
		n = len(events)
		time.Sleep(500 * time.Millisecond)
		events = keptEvents(t, h.d)
	}
	origins := map[string]int{}
	for _, e := range events {
		if way, ok := want[e.Path]; ok && e.Type == "create" {
			origins[way+"/"+e.Origin]++
		}
	}
	for _, o := range []string{"api/api", "mount/fuse", "outside/external"} {
		if origins[o] == 0 {
			t.Fatalf("%s: no create of origin %s among %d events (%v)", h.name, o, len(events), origins)
		}
	}
	return events
}

// checkStream asserts that the messages of host in msgs are the journal's
// events, each once, in seq order, every field as the journal tells it,
// with their subjects and ids.
func checkStream(t *testing.T, msgs []natstest.Msg, host string, events []natsout.Message) {
	t.Helper()
	i := 0
	for _, raw := range msgs {
		var m natsout.Message
		must(t, raw.Decode(&m))
		if m.Host != host {
			continue
		}
		if i >= len(events) {
			t.Fatalf("%s: message %+v past the journal's %d events", host, m, len(events))
		}
		want := events[i]
		want.Host, want.Sandbox = host, "default"
		got, _ := json.Marshal(m)
		exp, _ := json.Marshal(want)
		if !bytes.Equal(got, exp) {
			t.Fatalf("%s: message %d:\n %s\nwant\n %s", host, i, got, exp)
		}
		if sub := "sandfs." + host + ".default." + want.Type; raw.Subject != sub {
			t.Fatalf("%s: message %d: subject %q, want %q", host, i, raw.Subject, sub)
		}
		if id := host + "/default/" + strconv.FormatUint(want.Seq, 10); raw.ID != id {
			t.Fatalf("%s: message %d: id %q, want %q", host, i, raw.ID, id)
		}
		i++
	}
	if i != len(events) {
		t.Fatalf("%s: %d messages, the journal keeps %d events", host, i, len(events))
	}
}

// checkFleet settles every host's journal and asserts the stream holds
// each host's events exactly once, in seq order.
func checkFleet(t *testing.T, b *natstest.Broker, hosts []*natsHost, bursts map[*natsHost][]*burst) string {
	t.Helper()
	kept := map[string][]natsout.Message{}
	total := 0
	for _, h := range hosts {
		kept[h.name] = settle(t, h, bursts[h]...)
		total += len(kept[h.name])
	}
	msgs := b.WaitCount(t, natsout.StreamName, total, 60*time.Second)
	var sum []string
	for _, h := range hosts {
		checkStream(t, msgs, h.name, kept[h.name])
		sum = append(sum, fmt.Sprintf("%s: %d events", h.name, len(kept[h.name])))
	}
	return fmt.Sprintf("%s; one stream of %d", strings.Join(sum, ", "), len(msgs))
}

func noErrors(t *testing.T, errs []error) {
	t.Helper()
	for _, err := range errs {
		t.Error(err)
	}
	if len(errs) > 0 {
		t.FailNow()
	}
}

// TestNATSTwoDaemons: two daemons with two roots publish to one stream
// while API writes, mount writes and outside writes happen on both at once;
// each daemon's events are on the stream once each, in seq order.
func TestNATSTwoDaemons(t *testing.T) {
	b := natstest.Start(t)
	hosts := []*natsHost{startNATSHost(t, b, "h1"), startNATSHost(t, b, "h2")}
	bursts := map[*natsHost][]*burst{}
	for _, h := range hosts {
		bursts[h] = []*burst{startBurst(h, "b", 60)}
	}
	for _, h := range hosts {
		noErrors(t, bursts[h][0].wait(false))
	}
	t.Log(checkFleet(t, b, hosts, bursts))
}

// TestNATSExactlyOnce: two daemons publish to one stream while API, mount
// and outside writes happen on both; h1 is killed (kill -9) in the middle of
// its burst and started again, and then the broker is stopped for 10 s in
// the middle of a burst on both. The stream holds every event each journal
// keeps exactly once, in seq order, and while the broker was away no API
// write or mount write waited on it.
func TestNATSExactlyOnce(t *testing.T) {
	b := natstest.Start(t)
	h1, h2 := startNATSHost(t, b, "h1"), startNATSHost(t, b, "h2")
	hosts := []*natsHost{h1, h2}
	bursts := map[*natsHost][]*burst{}

	// A burst on both, h1 killed in its middle.
	k1, k2 := startBurst(h1, "k", 1_000_000), startBurst(h2, "k", 40)
	bursts[h1], bursts[h2] = []*burst{k1}, []*burst{k2}
	if !waitFor(30*time.Second, func() bool { return k1.count("api") >= 40 && k1.count("mount") >= 20 && k1.count("outside") >= 20 }) {
		t.Fatalf("the burst did not start: %d api, %d mount, %d outside", k1.count("api"), k1.count("mount"), k1.count("outside"))
	}
	must(t, h1.d.cmd.Process.Kill())
	if _, exited := h1.d.Wait(10 * time.Second); !exited {
		t.Fatal("daemon did not die on SIGKILL")
	}
	k1.wait(true) // its API and mount writes fail once it is dead
	noErrors(t, k2.wait(false))
	h1.start(t)
	killed := fmt.Sprintf("h1 killed after %d api, %d mount, %d outside writes", k1.count("api"), k1.count("mount"), k1.count("outside"))

	// The broker away for 10 s in the middle of a burst on both.
	var before []*burst
	for _, h := range hosts {
		before = append(before, startBurst(h, "r", 20))
	}
	for i, h := range hosts {
		noErrors(t, before[i].wait(false))
		bursts[h] = append(bursts[h], before[i])
	}
	b.Stop()
	downAt := time.Now()
	var slowest time.Duration
	var slowWay string
	down := []*burst{startBurst(h1, "down", 60), startBurst(h2, "down", 60)}
	for i, h := range hosts {
		bu := down[i]
		noErrors(t, bu.wait(false))
		bursts[h] = append(bursts[h], bu)
		for _, way := range []string{"api", "mount"} {
			if bu.slowest[way] > slowest {
				slowest, slowWay = bu.slowest[way], h.name+" "+way
			}
		}
	}
	if away := time.Since(downAt); away > 8*time.Second {
		t.Fatalf("the writes with the broker away took %v: the outage did not cover them", away)
	}
	if slowest > 2*time.Second {
		t.Fatalf("with the broker away, the slowest call (%s) took %v", slowWay, slowest)
	}
	time.Sleep(time.Until(downAt.Add(10 * time.Second)))
	b.Restart()
	for _, h := range hosts {
		bu := startBurst(h, "back", 20)
		noErrors(t, bu.wait(false))
		bursts[h] = append(bursts[h], bu)
	}
	t.Logf("%s; %s; slowest API or mount call with the broker away: %v (%s)", checkFleet(t, b, hosts, bursts), killed, slowest, slowWay)
}
