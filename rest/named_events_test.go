package rest

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"sandfs/core"
	"sandfs/core/journal"
	"sandfs/rest/named"
)

func TestNamedEvents(t *testing.T) {
	h := newNamedHarness(t)
	put := func(p, actor string) {
		t.Helper()
		r := h.do(t, req{Method: "PUT", Target: "/v1/sandboxes/default/fs/write?path=" + p + "&mkdir=true", Body: strings.NewReader("x"),
			Header: map[string]string{"X-Sandfs-Actor": actor}})
		wantStatus(t, r, 200)
	}
	put("/app/a", "agent-1")
	put("/app/b", "agent-2")
	put("/else/c", "agent-1")
	// A process on the mount, as the mirror tells it.
	h.def.Journal().Append(journal.Event{Type: journal.Write, Path: "/app/a", Origin: journal.Mirror, Pid: 42, Uid: 1000, Comm: "vim"})
	latest := h.def.Journal().Seq()

	page := func(target string) named.EventsPage {
		t.Helper()
		r := h.do(t, req{Method: "GET", Target: target})
		wantStatus(t, r, 200)
		var p named.EventsPage
		if err := json.Unmarshal(r.Body, &p); err != nil {
			t.Fatalf("%s: %v", r.Body, err)
		}
		return p
	}
	line := func(p named.EventsPage) string {
		var out []string
		for _, e := range p.Events {
			who := e.Actor
			if e.Comm != "" {
				who = e.Comm
			}
			out = append(out, e.Type+" "+e.Path+" "+e.Origin+" "+who)
		}
		return strings.Join(out, ",")
	}
	for _, tc := range []struct {
		name, query, want string
		more              bool
	}{
		{"all", "", "create /app api agent-1,create /app/a api agent-1,write /app/a api agent-1,create /app/b api agent-2,write /app/b api agent-2,create /else api agent-1,create /else/c api agent-1,write /else/c api agent-1,write /app/a fuse vim", false},
		{"actor", "?actor=agent-2", "create /app/b api agent-2,write /app/b api agent-2", false},
		{"fuse comm", "?actor=fuse:vim", "write /app/a fuse vim", false},
		{"origin", "?origin=fuse", "write /app/a fuse vim", false},
		{"path", "?path=else", "create /else api agent-1,create /else/c api agent-1,write /else/c api agent-1", false},
		{"last", "?last=2", "write /else/c api agent-1,write /app/a fuse vim", false},
		{"since", "?since=7", "write /else/c api agent-1,write /app/a fuse vim", false},
		{"limit", "?limit=2", "create /app api agent-1,create /app/a api agent-1", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, pre := range namedPrefixes {
				p := page(pre + "default/events" + tc.query)
				if got := line(p); got != tc.want {
					t.Errorf("%s: got %s\nwant %s", pre, got, tc.want)
				}
				if p.More != tc.more || p.Latest != latest || p.Oldest != 1 || p.Overflow {
					t.Errorf("%s: more %v latest %d oldest %d overflow %v; want more %v latest %d oldest 1", pre, p.More, p.Latest, p.Oldest, p.Overflow, tc.more, latest)
				}
			}
		})
	}
	// Pages follow one another by cursor.
	p := page("/v1/sandboxes/default/events?limit=4")
	p2 := page("/v1/sandboxes/default/events?limit=100&since=" + strconv.FormatUint(p.Cursor, 10))
	if len(p.Events)+len(p2.Events) != int(latest) || p2.Events[0].Seq != p.Events[3].Seq+1 || p2.More {
		t.Errorf("pages: %d then %d events (from %d), want %d in all", len(p.Events), len(p2.Events), p2.Events[0].Seq, latest)
	}
	if e := p2.Events[len(p2.Events)-1]; e.Pid == nil || *e.Pid != 42 || e.Uid == nil || *e.Uid != 1000 {
		t.Errorf("fuse event: %+v", e)
	}

	for _, tc := range []struct{ name, target, code string }{
		{"since not an integer", "default/events?since=x", "EINVAL"},
		{"since negative", "default/events?since=-1", "EINVAL"},
		{"since and last", "default/events?since=1&last=2", "EINVAL"},
		{"last zero", "default/events?last=0", "EINVAL"},
		{"limit too big", "default/events?limit=10001", "EINVAL"},
		{"bad origin", "default/events?origin=mount", "EINVAL"},
		{"relative workingDir", "default/events?path=a&workingDir=rel", "EINVAL"},
		{"unknown sandbox", "nope/events", "ENOENT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := 400
			if tc.code == "ENOENT" {
				status = 404
			}
			wantNamedError(t, h.do(t, req{Method: "GET", Target: "/v1/sandboxes/" + tc.target}), status, tc.code, "")
		})
	}
}

// Across a restart the events come back from the durable journal, and a
// since older than what retention kept says overflow.
func TestNamedEventsKept(t *testing.T) {
	state := t.TempDir()
	h := newNamedHarnessWith(t, core.Options{StateDir: state})
	for _, p := range []string{"/a", "/b"} {
		wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/sandboxes/default/fs/write?path=" + p, Body: strings.NewReader("x")}), 200)
	}
	h.def.Close()
	h = newNamedHarnessWith(t, core.Options{StateDir: state})
	r := h.do(t, req{Method: "GET", Target: "/v1/sandboxes/default/events"})
	wantStatus(t, r, 200)
	var p named.EventsPage
	json.Unmarshal(r.Body, &p)
	if len(p.Events) != 4 || p.Events[3].Path != "/b" || p.Latest != 4 {
		t.Fatalf("after a restart: %s", r.Body)
	}
}
