package rest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"sandfs/core"
	"sandfs/core/history"
	"sandfs/core/journal"
)

// wsUntil reads until a message for which ok is true (others skipped).
func wsUntil(t *testing.T, c *websocket.Conn, ok func(wsMsg) bool) wsMsg {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if m := wsRecv(t, c, time.Until(deadline)); ok(m) {
			return m
		}
	}
	t.Fatal("no matching message")
	return wsMsg{}
}

func TestNamedWatch(t *testing.T) {
	for _, pre := range namedPrefixes {
		t.Run(strings.Trim(pre, "/"), func(t *testing.T) {
			h := newNamedHarness(t)
			h.watching(t)
			h.mkdir(t, "/app")

			c := h.dialWatch(t, pre+"default/fs/watch", nil)
			wsSend(t, c, map[string]any{"type": "subscribe", "paths": []string{"app"}, "recursive": true, "workingDir": "/"})
			if m := wsRecv(t, c, 5*time.Second); m.Type != "subscribed" || len(m.Paths) != 1 || m.Paths[0] != "/app" {
				t.Fatalf("got %+v, want subscribed [/app]", m)
			}

			// A change through the API (the other prefix: same sandbox).
			other := namedPrefixes[0]
			if other == pre {
				other = namedPrefixes[1]
			}
			r := h.do(t, req{Method: "PUT", Target: other + "default/fs/write?path=/app/main.py&mkdir=true", Body: strings.NewReader("print(1)\n")})
			wantStatus(t, r, 200)
			m := wsUntil(t, c, func(m wsMsg) bool { return m.Type == "event" && m.Event == "write" })
			if m.Path != "/app/main.py" || m.IsDir || m.Size != 9 {
				t.Errorf("got %+v", m)
			}
			if _, err := time.Parse(time.RFC3339Nano, m.Timestamp); err != nil {
				t.Errorf("timestamp %q: %v", m.Timestamp, err)
			}

			// A change made outside (a process writing the root directly).
			if err := os.WriteFile(filepath.Join(h.root, "app", "outside.txt"), []byte("abc"), 0o644); err != nil {
				t.Fatal(err)
			}
			m = wsUntil(t, c, func(m wsMsg) bool { return m.Type == "event" && m.Path == "/app/outside.txt" })
			if m.Event != "create" && m.Event != "write" {
				t.Errorf("got %+v", m)
			}

			// Events of the other sandbox and outside the paths never come.
			r = h.do(t, req{Method: "PUT", Target: pre + "other/fs/write?path=/app/x&mkdir=true", Body: strings.NewReader("o")})
			wantStatus(t, r, 200)
			r = h.do(t, req{Method: "PUT", Target: pre + "default/fs/write?path=/elsewhere", Body: strings.NewReader("e")})
			wantStatus(t, r, 200)
			r = h.do(t, req{Method: "POST", Target: pre + "default/fs/chmod", Body: namedBody(map[string]any{"path": "/app/main.py", "mode": "0600"})})
			wantStatus(t, r, 200)
			m = wsUntil(t, c, func(m wsMsg) bool { return m.Type == "event" && m.Event == "chmod" })
			if m.Path != "/app/main.py" {
				t.Errorf("got %+v, want the chmod of /app/main.py (nothing of other, nothing of /elsewhere)", m)
			}

			// Up to 8 paths: 7 more fit, the 9th is refused.
			var seven []string
			for i := 0; i < 7; i++ {
				seven = append(seven, fmt.Sprintf("/p%d", i))
			}
			wsSend(t, c, map[string]any{"type": "subscribe", "paths": seven})
			m = wsUntil(t, c, func(m wsMsg) bool { return m.Type != "event" })
			if m.Type != "subscribed" || len(m.Paths) != 7 {
				t.Fatalf("got %+v, want 7 subscribed", m)
			}
			wsSend(t, c, map[string]any{"type": "subscribe", "paths": []string{"/ninth"}})
			m = wsUntil(t, c, func(m wsMsg) bool { return m.Type != "event" })
			if m.Type != "error" || !strings.Contains(m.Message, "8") {
				t.Errorf("got %+v, want the 9th path refused", m)
			}
			wsSend(t, c, map[string]any{"type": "subscribe", "paths": []string{"/p1"}, "workingDir": "rel"})
			if m = wsUntil(t, c, func(m wsMsg) bool { return m.Type != "event" }); m.Type != "error" {
				t.Errorf("relative workingDir: got %+v, want error", m)
			}
			if err := c.Close(websocket.StatusNormalClosure, ""); err != nil {
				t.Errorf("close: %v", err)
			}
		})
	}
}

func TestNamedWatchRefusals(t *testing.T) {
	h := newNamedHarness(t)
	h.srv.auth = newTokenCheck("tok")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	base := "ws" + strings.TrimPrefix(h.ts.URL, "http")
	_, res, err := websocket.Dial(ctx, base+"/v1/sprites/default/fs/watch", nil)
	if err == nil || res == nil || res.StatusCode != 401 {
		t.Errorf("no token: got %v, %v; want 401", res, err)
	}
	_, res, err = websocket.Dial(ctx, base+"/v1/sprites/nope/fs/watch?access_token=tok", nil)
	if err == nil || res == nil || res.StatusCode != 404 {
		t.Errorf("unknown sandbox: got %v, %v; want 404", res, err)
	}
	for _, q := range []string{"access_token=tok", "api_key=tok"} {
		c, _, err := websocket.Dial(ctx, base+"/v1/sandboxes/default/fs/watch?"+q, nil)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		c.Close(websocket.StatusNormalClosure, "")
	}
	c, _, err := websocket.Dial(ctx, base+"/v1/sandboxes/default/fs/watch", &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer tok"}}})
	if err != nil {
		t.Fatalf("header: %v", err)
	}
	c.Close(websocket.StatusNormalClosure, "")
}

// TestNamedWatchSlowReader: a client that stops reading loses events past
// its queue, is told how many, keeps its socket, and the daemon's memory
// and goroutines stay bounded.
func TestNamedWatchSlowReader(t *testing.T) {
	h := newNamedHarness(t)
	h.mkdir(t, "/s")
	baseG := runtime.NumGoroutine()

	// A client with a tiny receive buffer, so the server's writes block soon.
	client := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{
		Control: func(_, _ string, rc syscall.RawConn) error {
			return rc.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		},
	}).DialContext}}
	c := h.dialWatch(t, "/v1/sandboxes/default/fs/watch", client)
	wsSend(t, c, map[string]any{"type": "subscribe", "paths": []string{"/s"}, "recursive": true})
	if m := wsRecv(t, c, 5*time.Second); m.Type != "subscribed" {
		t.Fatalf("got %+v", m)
	}

	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	const n = 60_000
	ctx := core.WithActor(context.Background(), core.Actor{Origin: journal.API})
	for i := 0; i < n; i++ {
		h.def.Emit(ctx, journal.Remove, fmt.Sprintf("/s/f%d", i%64), "")
	}
	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapInuse) - int64(before.HeapInuse); grew > 64<<20 {
		t.Errorf("heap grew by %d MiB while the reader slept", grew>>20)
	}

	// Reading again: the events that fit, a dropped-N message, and the
	// socket still serves new events.
	got, dropped := 0, 0
	for dropped == 0 {
		m := wsRecv(t, c, 10*time.Second)
		switch m.Type {
		case "event":
			got++
		case "error":
			if _, err := fmt.Sscanf(m.Message, "dropped %d events", &dropped); err != nil {
				t.Fatalf("error message %q", m.Message)
			}
		}
	}
	if dropped <= 0 || got+dropped > n {
		t.Errorf("got %d events and dropped %d of %d", got, dropped, n)
	}
	if got >= n {
		t.Errorf("nothing was dropped")
	}
	// The queue may still be full when the dropped message comes (the
	// events that fit are still on their way), so a single new event could
	// be dropped too: tell chmod again until one arrives.
	stop := make(chan struct{})
	told := make(chan struct{})
	go func() {
		defer close(told)
		for {
			h.def.Emit(ctx, journal.Chmod, "/s", "")
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	wsUntil(t, c, func(m wsMsg) bool { return m.Type == "event" && m.Event == "chmod" && m.Path == "/s" })
	close(stop)
	<-told

	c.Close(websocket.StatusNormalClosure, "")
	client.CloseIdleConnections()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseG && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > baseG {
		buf := make([]byte, 1<<16)
		t.Errorf("goroutines: %d after close, %d before\n%s", g, baseG, buf[:runtime.Stack(buf, true)])
	}
}

// A subscribe with since replays the journal's events after it under the
// paths, then goes on live with none twice; a since older than what the
// journal keeps is told as the dropped message first.
func TestNamedWatchSince(t *testing.T) {
	state := t.TempDir()
	keep := history.Retention{MaxEvents: 4}
	h := newNamedHarnessWith(t, core.Options{StateDir: state, Retention: keep})
	put := func(p, body string) {
		t.Helper()
		wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/sandboxes/default/fs/write?path=" + p + "&mkdir=true", Body: strings.NewReader(body)}), 200)
	}
	put("/app/a", "1")
	put("/else/x", "2")
	put("/app/b", "3")
	c := h.dialWatch(t, "/v1/sandboxes/default/fs/watch", nil)
	wsSend(t, c, map[string]any{"type": "subscribe", "paths": []string{"/app"}, "recursive": true, "since": 0})
	if m := wsRecv(t, c, 5*time.Second); m.Type != "subscribed" {
		t.Fatalf("got %+v, want subscribed", m)
	}
	var got []string
	var last uint64
	for len(got) < 5 {
		m := wsRecv(t, c, 5*time.Second)
		if m.Type != "event" || m.Seq <= last {
			t.Fatalf("replay: got %+v after seq %d", m, last)
		}
		last = m.Seq
		got = append(got, m.Event+" "+m.Path)
	}
	want := "create /app,create /app/a,write /app/a,create /app/b,write /app/b"
	if strings.Join(got, ",") != want {
		t.Fatalf("replayed %v, want %s", got, want)
	}
	put("/app/c", "4")
	if m := wsRecv(t, c, 5*time.Second); m.Type != "event" || m.Path != "/app/c" || m.Event != "create" || m.Seq <= last {
		t.Fatalf("live after the replay: %+v", m)
	}

	// Retention keeps 4 events once a manifest allows it: since=1 lost some.
	hist := h.def.History()
	if err := hist.SaveManifest(history.Manifest{Seq: h.def.Journal().Seq()}); err != nil {
		t.Fatal(err)
	}
	if err := hist.Prune(); err != nil {
		t.Fatal(err)
	}
	oldest := hist.Oldest()
	c.CloseNow()
	h.def.Close() // the daemon restarts: the ring is gone, the store kept 4
	h = newNamedHarnessWith(t, core.Options{StateDir: state, Retention: keep})
	c2 := h.dialWatch(t, "/v1/sandboxes/default/fs/watch", nil)
	wsSend(t, c2, map[string]any{"type": "subscribe", "paths": []string{"/"}, "recursive": true, "since": 1})
	wsRecv(t, c2, 5*time.Second) // subscribed
	if m := wsRecv(t, c2, 5*time.Second); m.Type != "error" || m.Message != fmt.Sprintf("dropped %d events", oldest-2) {
		t.Fatalf("got %+v, want dropped %d events", m, oldest-2)
	}
	if m := wsRecv(t, c2, 5*time.Second); m.Type != "event" || m.Seq != oldest {
		t.Fatalf("after the dropped message: %+v, want the event of seq %d", m, oldest)
	}
}
