package rest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandfs/core/journal"
	"sandfs/rest/aio"
)

// The watch event stream over SSE: the client it is read with, and what it
// sends, drops and keeps for a slow client.

// sseClient reads one SSE stream.
type sseClient struct {
	resp *http.Response
	br   *bufio.Reader
}

type sseEvent struct{ ID, Event, Data string }

func (h *harness) openSSE(t *testing.T, target string, header map[string]string) *sseClient {
	t.Helper()
	hr, _ := http.NewRequest("GET", h.ts.URL+target, nil)
	for k, v := range header {
		hr.Header.Set(k, v)
	}
	res, err := h.ts.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("GET %s: status %d: %s", target, res.StatusCode, b)
	}
	checkAgainstOpenAPI(t, h.srv.Routes(), "GET", hr.URL.Path, resp{Status: 200, Header: res.Header})
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("Content-Type: got %q, want text/event-stream", ct)
	}
	return &sseClient{resp: res, br: bufio.NewReader(res.Body)}
}

// next reads the next event (skipping comments), failing after 10 s.
func (c *sseClient) next(t *testing.T) sseEvent {
	t.Helper()
	type result struct {
		ev  sseEvent
		err error
	}
	ch := make(chan result, 1)
	go func() {
		var ev sseEvent
		for {
			line, err := c.br.ReadString('\n')
			if err != nil {
				ch <- result{ev, err}
				return
			}
			line = strings.TrimSuffix(line, "\n")
			switch {
			case line == "":
				if ev.Event != "" || ev.Data != "" {
					ch <- result{ev, nil}
					return
				}
			case strings.HasPrefix(line, ":"):
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Event = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.Data = line[6:]
			default:
				ch <- result{ev, fmt.Errorf("unexpected line %q", line)}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("reading the stream: %v", r.err)
		}
		return r.ev
	case <-time.After(10 * time.Second):
		c.resp.Body.Close()
		t.Fatal("no SSE event within 10 s")
	}
	return sseEvent{}
}

func TestWatchSSE(t *testing.T) {
	h, _ := newWatchHarness(t)
	w := h.createWatch(t, `{"path":"/","debounce":50}`)
	for _, c := range []struct {
		name, target string
		header       map[string]string
	}{
		{"v2 events", "/v2/watch/" + w.WatcherID + "/events?cursor=" + strconv.FormatUint(w.InitialCursor, 10), nil},
		{"v1 events", "/v1/file/watch/" + w.WatcherID + "/events?cursor=" + strconv.FormatUint(w.InitialCursor, 10), nil},
		{"v2 poll with Accept", "/v2/watch/" + w.WatcherID + "/poll?cursor=" + strconv.FormatUint(w.InitialCursor, 10), map[string]string{"Accept": "text/event-stream"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := h.openSSE(t, c.target, c.header)
			first := s.next(t)
			started := decodeJSONString[aio.SSEStarted](t, first.Data)
			if first.Event != "watch_started" || first.ID != "" || started.WatcherID != w.WatcherID || started.Cursor != w.InitialCursor {
				t.Fatalf("first event: got %+v", first)
			}
			name := "/sse-" + strings.ReplaceAll(c.name, " ", "-")
			wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=" + name, Body: jsonBody("x")}), 200)
			var got []aio.WatchEvent
			for len(got) < 2 {
				ev := s.next(t)
				if ev.Event != "file_change" {
					t.Fatalf("event: got %+v, want file_change", ev)
				}
				e := decodeJSONString[aio.WatchEvent](t, ev.Data)
				if want := w.WatcherID + ":" + strconv.FormatUint(e.Seq, 10); ev.ID != want {
					t.Errorf("id: got %q, want %q", ev.ID, want)
				}
				if e.Path == name {
					got = append(got, e)
				}
			}
			wantEvents(t, got, []wantEv{{Type: "create", Path: name, Rel: name[1:], Origin: "api"}, {Type: "write", Path: name, Rel: name[1:], Origin: "api"}})
		})
	}

	t.Run("resume with Last-Event-ID", func(t *testing.T) {
		h.apiMkdir(t, "/res")
		w := h.createWatch(t, `{"path":"/res","debounce":50}`)
		for _, n := range []string{"a", "b", "c"} {
			wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/res/" + n, Body: jsonBody(n)}), 200)
		}
		all, _ := h.collect(t, w.WatcherID, w.InitialCursor, atLeast(6), 0) // create+write ×3
		if len(all) != 6 {
			t.Fatalf("events: got %d, want 6", len(all))
		}
		seen := all[2]
		s := h.openSSE(t, "/v2/watch/"+w.WatcherID+"/events?cursor=0", map[string]string{"Last-Event-ID": fmt.Sprintf("%s:%d", w.WatcherID, seen.Seq)})
		if first := s.next(t); first.Event != "watch_started" || decodeJSONString[aio.SSEStarted](t, first.Data).Cursor != seen.Seq {
			t.Fatalf("first event: got %+v, want watch_started at cursor %d", first, seen.Seq)
		}
		for _, want := range all[3:6] {
			ev := s.next(t)
			if e := decodeJSONString[aio.WatchEvent](t, ev.Data); e.Seq != want.Seq || e.Path != want.Path {
				t.Errorf("resumed: got %s (seq %d), want %s (seq %d)", evString(e), e.Seq, evString(want), want.Seq)
			}
		}
		// A Last-Event-ID of another watcher is ignored: ?cursor applies.
		s2 := h.openSSE(t, "/v2/watch/"+w.WatcherID+"/events?cursor=0", map[string]string{"Last-Event-ID": "w_other:5"})
		s2.next(t)
		if e := decodeJSONString[aio.WatchEvent](t, s2.next(t).Data); e.Seq != all[0].Seq {
			t.Errorf("other watcher's id: first event seq %d, want %d", e.Seq, all[0].Seq)
		}
	})

	t.Run("stream ends when the watcher stops", func(t *testing.T) {
		h.apiMkdir(t, "/stop")
		w := h.createWatch(t, `{"path":"/stop","debounce":50}`)
		s := h.openSSE(t, "/v2/watch/"+w.WatcherID+"/events", nil)
		s.next(t)
		h.do(t, req{Method: "DELETE", Target: "/v2/watch/" + w.WatcherID})
		done := make(chan error, 1)
		go func() { _, err := io.Copy(io.Discard, s.br); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("stream end: %v, want a clean EOF", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("stream still open 5 s after the watcher stopped")
		}
	})
}

// TestWatchSSEOverflow: a watcher whose buffer dropped events says so, once,
// as an overflow event (and poll says overflow: true).
func TestWatchSSEOverflow(t *testing.T) {
	h, sb := newWatchHarness(t)
	h.apiMkdir(t, "/ov")
	w := h.createWatch(t, `{"path":"/ov","debounce":50}`)
	const n = journal.BufferSize + 500
	for i := range n {
		sb.Journal().Append(journal.Event{Type: journal.Create, Path: fmt.Sprintf("/ov/f%d", i), Origin: journal.API})
	}
	// The watcher keeps the last BufferSize events (the kernel's echo of
	// the mkdir may come before them).
	first := sb.Journal().Seq() - journal.BufferSize + 1
	b := h.pollWatch(t, w.WatcherID, w.InitialCursor, 0)
	if !b.Overflow || len(b.Events) != aio.PollLimitDefaultV2 || b.Events[0].Seq != first {
		t.Errorf("poll: overflow %v, %d events from seq %d; want overflow, %d events from %d", b.Overflow, len(b.Events), b.Events[0].Seq, aio.PollLimitDefaultV2, first)
	}
	s := h.openSSE(t, "/v2/watch/"+w.WatcherID+"/events?cursor="+strconv.FormatUint(w.InitialCursor, 10), nil)
	if ev := s.next(t); ev.Event != "watch_started" {
		t.Fatalf("first: got %+v", ev)
	}
	ev := s.next(t)
	ov := decodeJSONString[aio.SSEOverflow](t, ev.Data)
	if ev.Event != "overflow" || !ov.Overflow || ov.WatcherID != w.WatcherID {
		t.Fatalf("second: got %+v, want overflow", ev)
	}
	count := 0
	for count < journal.BufferSize {
		ev := s.next(t)
		if ev.Event != "file_change" {
			t.Fatalf("event %d: got %q, want file_change (one overflow only)", count, ev.Event)
		}
		count++
	}
}

// TestWatchSSESlowClient: a client that never reads costs the daemon a
// bounded amount: the handler blocks in its write, holds no queue, and is
// gone once the client closes.
func TestWatchSSESlowClient(t *testing.T) {
	h, sb := newWatchHarness(t)
	w := h.createWatch(t, `{"path":"/","debounce":50}`)
	addr := strings.TrimPrefix(h.ts.URL, "http://")
	for len(h.served) > 0 {
		<-h.served
	}
	runtime.GC()
	baseG := runtime.NumGoroutine()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	baseHeap := ms.HeapAlloc

	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	conn.(*net.TCPConn).SetReadBuffer(4096)
	fmt.Fprintf(conn, "GET /v2/watch/%s/events HTTP/1.1\r\nHost: x\r\n\r\n", w.WatcherID)
	// More than sockets hold unread (each event carries its ~1 KiB path
	// twice), and fewer than a watcher buffer, which shifts once full.
	long := strings.Repeat("d", 200) + "/" + strings.Repeat("e", 200) + "/" + strings.Repeat("f", 200) + "/" + strings.Repeat("g", 200) + "/" + strings.Repeat("h", 200)
	for i := range journal.BufferSize - 500 {
		sb.Journal().Append(journal.Event{Type: journal.Create, Path: fmt.Sprintf("/slow/%s/%06d", long, i), Origin: journal.API})
	}
	time.Sleep(500 * time.Millisecond)
	runtime.GC()
	runtime.ReadMemStats(&ms)
	// The journal ring and the watcher buffer (10,000 events each) are the
	// only growth; a per-client queue of 50,000 events would be far more.
	if grown := int64(ms.HeapAlloc) - int64(baseHeap); grown > 32<<20 {
		t.Errorf("heap grew by %d MiB with a client that does not read", grown>>20)
	}
	if g := runtime.NumGoroutine(); g > baseG+6 {
		t.Errorf("goroutines: %d with one stream, baseline %d", g, baseG)
	}
	conn.Close()
	select {
	case <-h.served:
	case <-time.After(10 * time.Second):
		t.Fatal("the SSE handler did not return 10 s after its client closed")
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > baseG && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if g := runtime.NumGoroutine(); g > baseG {
		buf := make([]byte, 1<<20)
		t.Errorf("goroutines: %d after the client closed, baseline %d\n%s", g, baseG, buf[:runtime.Stack(buf, true)])
	}
}
