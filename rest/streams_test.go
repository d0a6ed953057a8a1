package rest

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandfs/rest/aio"
)

// TestEndStreams: EndStreams ends an SSE stream with its shutdown event, a
// long-poll with its empty batch and a wait with 503 unavailable, at once;
// a stream that begins afterwards ends the same way without waiting.
func TestEndStreams(t *testing.T) {
	h, _ := newWatchHarness(t)
	w := h.createWatch(t, `{"path":"/"}`)
	cursor := strconv.FormatUint(w.InitialCursor, 10)
	sse := h.openSSE(t, "/v2/watch/"+w.WatcherID+"/events?cursor="+cursor, nil)
	if ev := sse.next(t); ev.Event != "watch_started" {
		t.Fatalf("first event: got %+v", ev)
	}
	type call struct {
		name, method, target, body string
	}
	calls := []call{
		{"poll v2", "GET", "/v2/watch/" + w.WatcherID + "/poll?timeout=60&cursor=" + cursor, ""},
		{"poll v1", "POST", "/v1/file/watch/" + w.WatcherID + "/poll", `{"timeout":60,"cursor":` + cursor + `}`},
		{"wait", "POST", "/v1/file/watch/wait", `{"path":"/never","timeout":300}`},
	}
	answers := make(map[string]chan resp, len(calls))
	for _, c := range calls {
		ch := make(chan resp, 1)
		answers[c.name] = ch
		go func() { ch <- h.do(t, req{Method: c.method, Target: c.target, Body: jsonBody(c.body)}) }()
	}
	time.Sleep(200 * time.Millisecond) // inside their handlers
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	h.srv.EndStreams(ctx)
	if took := time.Since(start); took > time.Second {
		t.Errorf("EndStreams took %v", took)
	}
	ev := sse.next(t)
	if sd := decodeJSONString[aio.SSEShutdown](t, ev.Data); ev.Event != "shutdown" || sd.Reason != "the daemon is stopping" || sd.Cursor != w.InitialCursor {
		t.Errorf("last SSE event: got %+v, want shutdown at cursor %d", ev, w.InitialCursor)
	}
	check := func(name string, r resp) {
		t.Helper()
		if strings.HasPrefix(name, "poll") {
			b := wantAIO[aio.WatchBatch](t, r)
			if len(b.Events) != 0 || b.Cursor != w.InitialCursor || b.Overflow {
				t.Errorf("%s: got %+v, want the empty batch at %d", name, b, w.InitialCursor)
			}
			return
		}
		f := wantAIOError(t, r, 503, "timeout")
		if !strings.Contains(f.Message, "the daemon is stopping") || !f.Retryable || f.Operation != "watch_wait" {
			t.Errorf("%s: got %+v", name, f)
		}
	}
	for _, c := range calls {
		select {
		case r := <-answers[c.name]:
			check(c.name, r)
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: no answer 2 s after EndStreams", c.name)
		}
	}
	t.Run("after", func(t *testing.T) {
		for _, c := range calls {
			start := time.Now()
			check(c.name, h.do(t, req{Method: c.method, Target: c.target, Body: jsonBody(c.body)}))
			if took := time.Since(start); took > time.Second {
				t.Errorf("%s after EndStreams took %v", c.name, took)
			}
		}
	})
}
