package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
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

// TestNATSExactlyOnce: a real `sandfs serve --events` publishes every event
// of its journal to the stream exactly once, in seq order, with its subject
// and id, across a kill -9 mid-burst and a restart, and across a broker
// stopped for 5 s mid-burst, during which no API write waits on it.
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
	time.Sleep(time.Until(downAt.Add(5 * time.Second)))
	b.Restart()
	put(130, 20)

	// The journal is the truth: every event it keeps, once, in order.
	var page struct {
		Events []natsout.Message `json:"events"`
		Latest uint64            `json:"latest"`
	}
	resp, err := http.Get(d.URL + "/v1/sandboxes/default/events?since=0&limit=10000")
	must(t, err)
	must(t, json.NewDecoder(resp.Body).Decode(&page))
	resp.Body.Close()
	if len(page.Events) < 60+150 {
		t.Fatalf("the journal kept %d events", len(page.Events))
	}
	msgs := b.WaitCount(t, natsout.StreamName, len(page.Events), 60*time.Second)
	for i, raw := range msgs {
		var m natsout.Message
		must(t, raw.Decode(&m))
		want := page.Events[i]
		want.Host, want.Sandbox = "h1", "default"
		if m != want && !(m.Seq == want.Seq && m.Path == want.Path && m.Type == want.Type && m.Timestamp == want.Timestamp) {
			t.Fatalf("message %d: %+v, want %+v", i, m, want)
		}
		if sub := "sandfs.h1.default." + want.Type; raw.Subject != sub {
			t.Fatalf("message %d: subject %q, want %q", i, raw.Subject, sub)
		}
		if id := "h1/default/" + strconv.FormatUint(want.Seq, 10); raw.ID != id {
			t.Fatalf("message %d: id %q, want %q", i, raw.ID, id)
		}
	}
	t.Logf("%d events published once each (killed after %d writes); slowest API write with the broker away: %v",
		len(msgs), wrote.Load(), slowest)
}
