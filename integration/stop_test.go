package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Stopping the daemon with live watch streams connected: each stream gets its last message and the daemon exits at once.

// quickExit is the daemon's environment for timing its exit: the race
// runtime otherwise sleeps a second before a clean exit.
var quickExit = daemonOptions{Env: []string{"GORACE=atexit_sleep_ms=0"}}

// streamEnd is what one stream saw last.
type streamEnd struct {
	name string
	last string // its last message, as the test renders it
	err  error
}

// TestStopEndsStreams: an SSE stream, a websocket, a long-poll and a wait
// are connected; SIGINT; the daemon exits 0 within 2 s (it waited its
// whole --shutdown-timeout, 10 s, before) and each client saw its last
// message.
func TestStopEndsStreams(t *testing.T) {
	d := startDaemonWith(t, quickExit)
	var w struct {
		WatcherID     string `json:"watcher_id"`
		InitialCursor uint64 `json:"initial_cursor"`
	}
	aioCall(t, d, "POST", "/v2/watch", `{"path":"/"}`, &w)
	ends := make(chan streamEnd, 4)
	ready := make(chan string, 4)

	// SSE: the last event is "shutdown".
	go func() {
		resp, err := http.Get(d.URL + "/v2/watch/" + w.WatcherID + "/events")
		if err != nil {
			ends <- streamEnd{name: "sse", err: err}
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var event, last string
		for sc.Scan() {
			line := sc.Text()
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				event = v
			}
			if v, ok := strings.CutPrefix(line, "data: "); ok {
				last = event + " " + v
				if event == "watch_started" {
					ready <- "sse"
				}
			}
		}
		ends <- streamEnd{name: "sse", last: last, err: sc.Err()}
	}()

	// Websocket: closed with 1001, going away.
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(d.URL, "http")+"/v1/sandboxes/default/fs/watch",
			&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + d.Token}}})
		if err != nil {
			ends <- streamEnd{name: "websocket", err: err}
			return
		}
		defer c.CloseNow()
		c.Write(ctx, websocket.MessageText, []byte(`{"type":"subscribe","paths":["/"],"recursive":true}`))
		for {
			_, msg, err := c.Read(ctx)
			if err != nil {
				var ce websocket.CloseError
				if errors.As(err, &ce) {
					ends <- streamEnd{name: "websocket", last: "close " + ce.Code.String() + " " + ce.Reason}
					return
				}
				ends <- streamEnd{name: "websocket", err: err}
				return
			}
			if strings.Contains(string(msg), `"subscribed"`) {
				ready <- "websocket"
			}
		}
	}()

	// Long-poll and wait: answered at once.
	post := func(name, route, body string) {
		ready <- name // the request is sent; the daemon holds it
		resp, err := http.Post(d.URL+route, "application/json", strings.NewReader(body))
		if err != nil {
			ends <- streamEnd{name: name, err: err}
			return
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		ends <- streamEnd{name: name, last: resp.Status + " " + string(raw)}
	}
	go post("poll", "/v1/file/watch/"+w.WatcherID+"/poll", `{"cursor":`+jsonNum(w.InitialCursor)+`,"timeout":60}`)
	go post("wait", "/v1/file/watch/wait", `{"path":"/never","timeout":300}`)

	for range 4 {
		select {
		case <-ready:
		case e := <-ends:
			t.Fatalf("%s ended before the signal: %+v\n%s", e.name, e, d.Log())
		case <-time.After(10 * time.Second):
			t.Fatalf("the streams are not all connected\n%s", d.Log())
		}
	}
	time.Sleep(300 * time.Millisecond) // the poll and the wait are inside their handlers
	start := time.Now()
	d.Signal(t, syscall.SIGINT)
	err, exited := d.Wait(2 * time.Second)
	took := time.Since(start)
	if !exited {
		t.Fatalf("the daemon still runs 2 s after SIGINT with streams connected\n%s", d.Log())
	}
	if err != nil {
		t.Fatalf("the daemon exited %v, want 0\n%s", err, d.Log())
	}
	t.Logf("the daemon exited %v after SIGINT with 4 streams connected", took)

	got := map[string]streamEnd{}
	for range 4 {
		select {
		case e := <-ends:
			got[e.name] = e
		case <-time.After(5 * time.Second):
			t.Fatalf("only %d streams ended: %+v", len(got), got)
		}
	}
	want := map[string][]string{
		"sse":       {`shutdown {"reason":"the daemon is stopping","cursor":`},
		"websocket": {"close StatusGoingAway the daemon is stopping"},
		"poll":      {"200 OK", `"success":true`, `"events":[]`, `"cursor":` + jsonNum(w.InitialCursor)},
		"wait":      {"503 Service Unavailable", `"success":false`, `"error_type":"timeout"`, "the daemon is stopping"},
	}
	for name, parts := range want {
		e := got[name]
		for _, p := range parts {
			if e.err != nil || !strings.Contains(e.last, p) {
				t.Errorf("%s: last message %q (err %v), want it to hold %q", name, e.last, e.err, p)
			}
		}
	}
}

func jsonNum(n uint64) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// TestSecondSignalWhenIgnored: a daemon started with SIGINT ignored (a
// script's "sandfs serve &" without job control) still stops at the first
// SIGINT and exits at once, 130, at the second, while a request holds the
// graceful stop.
func TestSecondSignalWhenIgnored(t *testing.T) {
	wrapper := filepath.Join(t.TempDir(), "serve-ignoring-int")
	script := "#!/bin/sh\ntrap '' INT\nexec " + sandfsBin(t) + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o := quickExit
	o.Bin = wrapper
	d := startDaemonWith(t, o)
	// A request in flight holds the graceful stop: an upload whose body
	// never ends.
	pr, pw := io.Pipe()
	defer pw.Close()
	req, _ := http.NewRequest("PUT", d.URL+"/v1/fs/file?path=/held.txt", pr)
	req.Header.Set("Content-Type", "application/octet-stream")
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	pw.Write([]byte("some"))
	time.Sleep(300 * time.Millisecond)
	d.Signal(t, syscall.SIGINT)
	if _, exited := d.Wait(500 * time.Millisecond); exited {
		t.Fatalf("the daemon exited at the first SIGINT with a request in flight\n%s", d.Log())
	}
	start := time.Now()
	d.Signal(t, syscall.SIGINT)
	err, exited := d.Wait(time.Second)
	if !exited {
		t.Fatalf("the daemon still runs 1 s after a second SIGINT (started with SIGINT ignored)\n%s", d.Log())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("got exit %v, want status 130\n%s", err, d.Log())
	}
	t.Logf("exited 130 %v after the second SIGINT", time.Since(start))
}
