package rest

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandfs/core/journal"
	"sandfs/rest/aio"
	"sandfs/rest/httpkit"
	"sandfs/rest/named"
)

const testActor = "agent-7 · session/42 · tool:write"

// TestActorHeader: a write naming its actor leaves it on every event it
// makes, in the journal and in each watch shape: the AIO long poll and SSE
// stream, and the named family's websocket.
func TestActorHeader(t *testing.T) {
	h, sb := newWatchHarness(t)
	w := h.createWatch(t, `{"path":"/","debounce":50}`)
	s := h.openSSE(t, "/v2/watch/"+w.WatcherID+"/events?cursor="+strconv.FormatUint(w.InitialCursor, 10), nil)
	if first := s.next(t); first.Event != "watch_started" {
		t.Fatalf("first event: %+v", first)
	}
	cursor := sb.Journal().Seq()
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/a.txt", Body: jsonBody("x"),
		Header: map[string]string{httpkit.ActorHeader: testActor}}), 200)
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/b.txt", Body: jsonBody("y")}), 200)

	es, _ := sb.Journal().Since(cursor, 100)
	n := 0
	for _, e := range es {
		switch e.Path {
		case "/a.txt":
			n++
			if e.Actor != testActor || e.Origin != journal.API {
				t.Errorf("journal %s %s: origin %s actor %q, want api %q", e.Type, e.Path, e.Origin, e.Actor, testActor)
			}
		case "/b.txt":
			if e.Actor != "" {
				t.Errorf("journal %s %s: actor %q, want none", e.Type, e.Path, e.Actor)
			}
		}
	}
	if n == 0 {
		t.Fatalf("no journal event on /a.txt: %+v", es)
	}

	polled, _ := h.collect(t, w.WatcherID, w.InitialCursor, func(es []aio.WatchEvent) bool {
		for _, e := range es {
			if e.Path == "/b.txt" {
				return true
			}
		}
		return false
	}, 0)
	var raw []byte
	for _, e := range polled {
		want := ""
		if e.Path == "/a.txt" {
			want = testActor
		}
		if e.Actor != want {
			t.Errorf("poll %s %s: actor %q, want %q", e.Type, e.Path, e.Actor, want)
		}
		if e.Path == "/b.txt" {
			raw, _ = json.Marshal(e)
		}
	}
	if strings.Contains(string(raw), `"actor"`) {
		t.Errorf("an event without an actor names one: %s", raw)
	}
	for got := 0; got < 2; {
		ev := s.next(t)
		e := decodeJSONString[aio.WatchEvent](t, ev.Data)
		if e.Path == "/a.txt" {
			got++
			if e.Actor != testActor || !strings.Contains(ev.Data, `"actor":`) {
				t.Errorf("sse %s: %s", e.Type, ev.Data)
			}
		}
	}
}

// TestActorHeaderNamedWatch: the named family's websocket tells the actor.
func TestActorHeaderNamedWatch(t *testing.T) {
	h := newNamedHarness(t)
	h.watching(t)
	c := h.dialWatch(t, "/v1/sandboxes/default/fs/watch", nil)
	wsSend(t, c, map[string]any{"type": "subscribe", "paths": []string{"/"}, "recursive": true})
	if m := wsRecv(t, c, 5*time.Second); m.Type != "subscribed" {
		t.Fatalf("got %+v", m)
	}
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/sandboxes/default/fs/write?path=/n.txt", Body: strings.NewReader("n"),
		Header: map[string]string{httpkit.ActorHeader: testActor}}), 200)
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	for {
		_, b, err := c.Read(rctx)
		if err != nil {
			t.Fatalf("read: %v", err)
		}
		var m named.WSEvent
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		if m.Type == "event" && m.Path == "/n.txt" && m.Event == "write" {
			if m.Actor != testActor {
				t.Errorf("websocket event %s: actor %q, want %q", b, m.Actor, testActor)
			}
			return
		}
	}
}

// TestActorHeaderRefused: a bad actor header is 400 invalid_request in the
// family's shape, and the write does not happen.
func TestActorHeaderRefused(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	bad := map[string]string{
		"129 bytes":           strings.Repeat("a", 129),
		"not UTF-8":           "agent\xff",
		"tab":                 "agent\t1",
		"C1 control (U+0085)": "agent\u0085",
		"bidi override":       "agent\u202egnp.exe",
		"zero width space":    "age\u200bnt",
		"line separator":      "agent\u2028x",
		"byte order mark":     "\ufeffagent",
		"tag character":       "agent\U000E0041",
		"no-break space":      "agent\u00a0x",
		"the daemon's origin": "external",
		"the mirror's label":  "fuse:vim",
		"a restore's label":   "restore:cp_0123456789ab",
		"api in capitals":     "API",
	}
	routes := []struct{ family, method, target, body string }{
		{FamilyAgent, "PUT", "/v1/fs/file?path=/%s", "x"},
		{FamilyAIOv1, "POST", "/v1/file/write", `{"file":"/%s","content":"x"}`},
		{FamilyNamed, "PUT", "/v1/sandboxes/default/fs/write?path=/%s", "x"},
	}
	i := 0
	for name, v := range bad {
		for _, rt := range routes {
			i++
			p := "f" + strconv.Itoa(i)
			r := h.do(t, req{Method: rt.method, Target: strings.Replace(rt.target, "%s", p, 1), Body: jsonBody(strings.Replace(rt.body, "%s", p, 1)),
				Header: map[string]string{httpkit.ActorHeader: v}})
			t.Run(name+" "+rt.family, func(t *testing.T) {
				wantFamilyError(t, rt.family, r, 400, "invalid_request", "invalid_request")
				if !strings.Contains(string(r.Body), httpkit.ActorHeader) {
					t.Errorf("the refusal does not name the header: %s", r.Body)
				}
				h.wantAbsent(t, "/"+p)
			})
		}
	}

	// Bytes a client library will not send (C0 controls, DEL): straight to
	// the handler.
	for _, v := range []string{"agent\x01", "agent\x7f", "a\nb"} {
		rec := httptest.NewRecorder()
		hr := localRequest("PUT", "/v1/fs/file?path=/raw", strings.NewReader("x"))
		hr.Header.Set(httpkit.ActorHeader, v)
		h.srv.Handler().ServeHTTP(rec, hr)
		if rec.Code != http.StatusBadRequest {
			t.Errorf("%q: status %d, want 400 (%s)", v, rec.Code, rec.Body)
		}
		h.wantAbsent(t, "/raw")
	}

	// Twice is refused; 128 bytes and an empty value pass.
	hr, _ := http.NewRequest("PUT", h.ts.URL+"/v1/fs/file?path=/twice2", strings.NewReader("x"))
	hr.Header.Add(httpkit.ActorHeader, "a")
	hr.Header.Add(httpkit.ActorHeader, "b")
	res, err := h.ts.Client().Do(hr)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 400 {
		t.Errorf("header twice: status %d, want 400", res.StatusCode)
	}
	h.wantAbsent(t, "/twice2")
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/ok", Body: jsonBody("x"),
		Header: map[string]string{httpkit.ActorHeader: strings.Repeat("é", 64)}}), 200)
}
