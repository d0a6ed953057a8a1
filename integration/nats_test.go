package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"sandfs/internal/natsout"
	"sandfs/internal/natsout/natstest"
)

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

// keptEvents is every event the daemon's journal keeps, as the named
// family tells them.
func keptEvents(t *testing.T, d *Daemon) []natsout.Message {
	t.Helper()
	var page struct {
		Events []natsout.Message `json:"events"`
	}
	resp, err := http.Get(d.URL + "/v1/sandboxes/default/events?since=0&limit=10000")
	must(t, err)
	defer resp.Body.Close()
	must(t, json.NewDecoder(resp.Body).Decode(&page))
	return page.Events
}

// checkStream asserts that the messages of host in msgs are the journal's
// events, each once, in seq order, with their subjects and ids.
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
		if m.Seq != want.Seq || m.Path != want.Path || m.Type != want.Type || m.Timestamp != want.Timestamp ||
			m.Origin != want.Origin || m.OldPath != want.OldPath || m.Size != want.Size || m.Sandbox != want.Sandbox {
			t.Fatalf("%s: message %d: %+v, want %+v", host, i, m, want)
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

// TestNATSExactlyOnce: a real `sandfs serve --events` publishes every event
// of its journal to the stream exactly once, in seq order, with its subject
// and id, across a kill -9 mid-burst and a restart, and across a broker
// stopped for 10 s mid-burst, during which no API write waits on it.
func TestNATSExactlyOnce(t *testing.T) {
	b := natstest.Start(t)
	root, state := t.TempDir(), t.TempDir()
	args := []string{"--root", root, "--state", state, "--events", b.URL(), "--events-host", "h1"}
	d := startDaemon(t, args...)

	// A burst, killed in its middle.
	var wrote atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; ; i++ {
			if _, err := natsPut(d, fmt.Sprintf("/k%d", i)); err != nil {
				return
			}
			wrote.Add(1)
		}
	}()
	if !waitFor(20*time.Second, func() bool { return wrote.Load() >= 60 }) {
		t.Fatal("the burst did not start")
	}
	must(t, d.cmd.Process.Kill())
	<-done
	if _, exited := d.Wait(10 * time.Second); !exited {
		t.Fatal("daemon did not die on SIGKILL")
	}

	d = startDaemon(t, args...)
	slowest := time.Duration(0)
	put := func(from, n int) {
		for i := from; i < from+n; i++ {
			took, err := natsPut(d, fmt.Sprintf("/r%d", i))
			must(t, err)
			slowest = max(slowest, took)
		}
	}
	put(0, 30)
	b.Stop()
	downAt := time.Now()
	put(30, 100)
	if slowest > time.Second {
		t.Fatalf("an API write took %v with the broker away", slowest)
	}
	time.Sleep(time.Until(downAt.Add(10 * time.Second)))
	b.Restart()
	put(130, 20)

	events := keptEvents(t, d)
	if len(events) < 60+150 {
		t.Fatalf("the journal kept %d events", len(events))
	}
	msgs := b.WaitCount(t, natsout.StreamName, len(events), 60*time.Second)
	checkStream(t, msgs, "h1", events)
	t.Logf("%d events published once each (killed after %d writes); slowest API write with the broker away: %v",
		len(msgs), wrote.Load(), slowest)
}

// TestNATSTwoDaemons: two daemons with two roots publish to one stream while
// API writes and outside writes (in the roots directly) happen; each
// daemon's events are on the stream once each, in seq order.
func TestNATSTwoDaemons(t *testing.T) {
	b := natstest.Start(t)
	ds := map[string]*Daemon{}
	for _, host := range []string{"h1", "h2"} {
		ds[host] = startDaemon(t, "--events", b.URL(), "--events-host", host)
	}
	var wg sync.WaitGroup
	for host, d := range ds {
		wg.Add(2)
		go func() {
			defer wg.Done()
			for i := 0; i < 100; i++ {
				if _, err := natsPut(d, fmt.Sprintf("/api%d", i)); err != nil {
					t.Errorf("%s: %v", host, err)
					return
				}
			}
		}()
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if err := os.WriteFile(filepath.Join(d.Root, fmt.Sprintf("outside%d", i)), []byte("x"), 0o644); err != nil {
					t.Errorf("%s: %v", host, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	// The outside writes reach the journals through the kernel watch: wait
	// until both journals tell every file, then for the stream.
	for host, d := range ds {
		if !waitFor(20*time.Second, func() bool {
			n := 0
			for _, e := range keptEvents(t, d) {
				if e.Type == "create" && e.Origin == "external" {
					n++
				}
			}
			return n == 50
		}) {
			t.Fatalf("%s: the outside creates did not all reach the journal", host)
		}
	}
	time.Sleep(500 * time.Millisecond) // a late write event of an outside file
	e1, e2 := keptEvents(t, ds["h1"]), keptEvents(t, ds["h2"])
	msgs := b.WaitCount(t, natsout.StreamName, len(e1)+len(e2), 60*time.Second)
	checkStream(t, msgs, "h1", e1)
	checkStream(t, msgs, "h2", e2)
	t.Logf("h1: %d events, h2: %d events, one stream of %d", len(e1), len(e2), len(msgs))
}
