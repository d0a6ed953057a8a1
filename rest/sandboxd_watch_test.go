package rest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandfs/core/journal"
	"sandfs/rest/sandboxd"
)

// GET /v1/watch, the sandboxd family's change stream (sandfs's proposal for
// the KEP's Watch): what each scope hears, resuming, errors, and its end.
// Events are appended to the journal directly, so each stream's content is
// exact whatever the kernel would add.

// watchLine is a change event as the tests compare it.
func watchLine(e sandboxd.WatchEvent) string {
	if e.OldPath != "" {
		return e.Type + " " + e.Path + " <- " + e.OldPath
	}
	return e.Type + " " + e.Path
}

// changes reads change events until one at path last, checking each id.
func (c *sseClient) changes(t *testing.T, last string) (lines []string, events []sandboxd.WatchEvent) {
	t.Helper()
	for {
		ev := c.next(t)
		if ev.Event != "change" {
			t.Fatalf("event: got %+v, want change", ev)
		}
		e := decodeJSONString[sandboxd.WatchEvent](t, ev.Data)
		if ev.ID != strconv.FormatUint(e.Seq, 10) {
			t.Errorf("id %q, want the seq %d", ev.ID, e.Seq)
		}
		lines, events = append(lines, watchLine(e)), append(events, e)
		if e.Path == last {
			return lines, events
		}
	}
}

func (h *harness) openWatch(t *testing.T, target string, header map[string]string) (*sseClient, sandboxd.WatchStarted) {
	t.Helper()
	s := h.openSSE(t, target, header)
	ev := s.next(t)
	if ev.Event != "watch_started" || ev.ID != "" {
		t.Fatalf("first event: got %+v, want watch_started", ev)
	}
	return s, decodeJSONString[sandboxd.WatchStarted](t, ev.Data)
}

func TestSandboxdWatch(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	j := h.srv.reg.Get("default").Journal()
	h.mkdir(t, "/w/sub/deep")
	mtime := time.Date(2026, 12, 3, 10, 0, 0, 0, time.FixedZone("x", 3600))
	cases := []struct {
		name, query, last string
		want              []string
	}{
		{"recursive", "path=/w&recursive=true", "/w/end", []string{
			"create /w/a", "modify /w/a", "attrib /w/a", "rename /w/sub/b <- /w/a", "modify /w/sub/deep/z",
			"delete /w/sub/b", "rename /w/y <- /out/y", "create /w/sub/end", "create /w/end"}},
		{"direct entries", "path=/w&recursive=false", "/w/end", []string{
			"create /w/a", "modify /w/a", "attrib /w/a", "rename /w/sub/b <- /w/a", "rename /w/y <- /out/y", "create /w/end"}},
		{"subdirectory, recursive", "path=w/sub/&recursive=1", "/w/sub/end", []string{
			"rename /w/sub/b <- /w/a", "modify /w/sub/deep/z", "delete /w/sub/b", "create /w/sub/end"}},
		{"root", "path=/&recursive=true", "/w/end", []string{
			"create /w/a", "modify /w/a", "attrib /w/a", "rename /w/sub/b <- /w/a", "modify /w/sub/deep/z",
			"delete /w/sub/b", "create /out/x", "rename /w/y <- /out/y", "create /wx", "create /w/sub/end", "create /w/end"}},
	}
	streams := make([]*sseClient, len(cases))
	for i, c := range cases {
		s, started := h.openWatch(t, "/v1/watch?"+c.query, nil)
		want := sandboxd.WatchStarted{Path: "/", Recursive: true, Seq: j.Seq()}
		if c.last == "/w/sub/end" {
			want.Path = "/w/sub"
		} else if strings.Contains(c.query, "path=/w&") {
			want.Path, want.Recursive = "/w", c.name == "recursive"
		}
		if started != want {
			t.Errorf("%s: watch_started %+v, want %+v", c.name, started, want)
		}
		streams[i] = s
	}
	for _, e := range []journal.Event{
		{Type: journal.Create, Path: "/w/a"},
		{Type: journal.Write, Path: "/w/a", Size: 5, Mtime: mtime, Actor: "agent-7"},
		{Type: journal.Chmod, Path: "/w/a"},
		{Type: journal.Rename, Path: "/w/sub/b", OldPath: "/w/a"},
		{Type: journal.Write, Path: "/w/sub/deep/z"},
		{Type: journal.Remove, Path: "/w/sub/b"},
		{Type: journal.Create, Path: "/out/x"},
		{Type: journal.Rename, Path: "/w/y", OldPath: "/out/y"},
		{Type: journal.Create, Path: "/wx"}, // beside /w, not in it
		{Type: journal.Create, Path: "/w/sub/end", IsDir: true},
		{Type: journal.Create, Path: "/w/end"},
	} {
		e.Origin = journal.API
		j.AppendNow(e)
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, events := streams[i].changes(t, c.last)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("changes:\ngot  %q\nwant %q", got, c.want)
			}
			for _, e := range events {
				if e.Origin != "api" {
					t.Errorf("%s: origin %q, want api", watchLine(e), e.Origin)
				}
				if e.Path == "/w/sub/end" && !e.IsDir {
					t.Errorf("%s: is_dir false", watchLine(e))
				}
				if e.Type == "modify" && e.Path == "/w/a" {
					want := sandboxd.WatchEvent{Seq: e.Seq, Type: "modify", Path: "/w/a", Size: 5, ModifiedAt: "2026-12-03T09:00:00Z", Origin: "api", Actor: "agent-7"}
					if e != want {
						t.Errorf("modify: got %+v, want %+v", e, want)
					}
				}
				if _, err := time.Parse(time.RFC3339, e.ModifiedAt); err != nil || !strings.HasSuffix(e.ModifiedAt, "Z") {
					t.Errorf("%s: modified_at %q is not RFC 3339 UTC", watchLine(e), e.ModifiedAt)
				}
			}
		})
	}
}

// TestSandboxdWatchResume: since and Last-Event-ID replay the journal's
// events after the seq, then the live ones, each once; a since older than
// the journal keeps is told as overflow first.
func TestSandboxdWatchResume(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	j := h.srv.reg.Get("default").Journal()
	h.mkdir(t, "/r")
	add := func(p string) uint64 {
		return j.AppendNow(journal.Event{Type: journal.Create, Path: p, Origin: journal.API}).Seq
	}
	s1 := add("/r/1")
	add("/elsewhere")
	s2 := add("/r/2")
	add("/r/3")
	since := func(seq uint64) func() string { return func() string { return "since=" + strconv.FormatUint(seq, 10) } }
	// Each case's live event stays in the journal: the later replays hear it.
	for _, c := range []struct {
		name   string
		query  func() string
		header map[string]string
		want   []string // the replay, then the live event
	}{
		{"since", since(s1), nil, []string{"create /r/2", "create /r/3", "create /r/live-since"}},
		{"Last-Event-ID over since", since(0), map[string]string{"Last-Event-ID": strconv.FormatUint(s2, 10)},
			[]string{"create /r/3", "create /r/live-since", "create /r/live-Last-Event-ID-over-since"}},
		{"since now", func() string { return since(j.Seq())() }, nil, []string{"create /r/live-since-now"}},
		{"since in the future", since(999999), nil, []string{"create /r/live-since-in-the-future"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, started := h.openWatch(t, "/v1/watch?path=/r&"+c.query(), c.header)
			live := "/r/live-" + strings.ReplaceAll(c.name, " ", "-")
			add(live)
			got, events := s.changes(t, live)
			if strings.Join(got, "\n") != strings.Join(c.want, "\n") {
				t.Errorf("changes:\ngot  %q\nwant %q", got, c.want)
			}
			if last := events[len(events)-1]; last.Seq <= started.Seq {
				t.Errorf("live event seq %d, want after watch_started's %d", last.Seq, started.Seq)
			}
		})
	}

	t.Run("since older than the journal keeps", func(t *testing.T) {
		for i := range journal.RingSize {
			j.AppendNow(journal.Event{Type: journal.Write, Path: fmt.Sprintf("/other/%d", i), Origin: journal.API})
		}
		s, _ := h.openWatch(t, "/v1/watch?path=/r&since="+strconv.FormatUint(s1, 10), nil)
		ev := s.next(t)
		if ov := decodeJSONString[sandboxd.WatchOverflow](t, ev.Data); ev.Event != "overflow" || ov.Seq != s1 {
			t.Fatalf("first event after watch_started: got %+v, want overflow after %d", ev, s1)
		}
		add("/r/after-overflow")
		got, _ := s.changes(t, "/r/after-overflow")
		if want := []string{"create /r/after-overflow"}; strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("changes: got %q, want %q", got, want)
		}
	})
}

func TestSandboxdWatchErrors(t *testing.T) {
	h, _ := sandboxdFixture(t)
	for _, c := range []struct {
		name, query string
		header      map[string]string
		status      int
		code        string
	}{
		{"no path", "recursive=true", nil, 400, "INVALID_ARGUMENT"},
		{"climbs above the root", "path=/d/../../x", nil, 403, "PERMISSION_DENIED"},
		{"missing", "path=/nope", nil, 404, "NOT_FOUND"},
		{"a file", "path=/a.txt", nil, 400, "INVALID_ARGUMENT"},
		{"a symlink to nothing", "path=/d/broken", nil, 404, "NOT_FOUND"},
		{"bad recursive", "path=/d&recursive=maybe", nil, 400, "INVALID_ARGUMENT"},
		{"negative since", "path=/&since=-1", nil, 400, "INVALID_ARGUMENT"},
		{"empty since", "path=/&since=", nil, 400, "INVALID_ARGUMENT"},
		{"word since", "path=/&since=latest", nil, 400, "INVALID_ARGUMENT"},
		{"bad Last-Event-ID", "path=/", map[string]string{"Last-Event-ID": "w_1:5"}, 400, "INVALID_ARGUMENT"},
	} {
		t.Run(c.name, func(t *testing.T) {
			wantSandboxdError(t, h.do(t, req{Method: "GET", Target: "/v1/watch?" + c.query, Header: c.header}), c.status, c.code)
		})
	}
}

// TestSandboxdWatchEnds: the stream's last event is shutdown, with why,
// when its sandbox is removed and when the daemon stops.
func TestSandboxdWatchEnds(t *testing.T) {
	t.Run("sandbox removed", func(t *testing.T) {
		rh := newRegHarness(t, regOpts{})
		s, _ := rh.openWatch(t, "/v1/watch?path=/&sandbox=a", nil)
		go rh.reg.Remove(context.Background(), "a")
		ev := s.next(t)
		if sd := decodeJSONString[sandboxd.WatchShutdown](t, ev.Data); ev.Event != "shutdown" || sd.Reason != "the sandbox was removed" {
			t.Errorf("last event: got %+v, want shutdown, the sandbox was removed", ev)
		}
	})
	t.Run("daemon stops", func(t *testing.T) {
		h := newHarness(t, harnessOpts{})
		s, _ := h.openWatch(t, "/v1/watch?path=/", nil)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		h.srv.EndStreams(ctx)
		ev := s.next(t)
		if sd := decodeJSONString[sandboxd.WatchShutdown](t, ev.Data); ev.Event != "shutdown" || sd.Reason != "the daemon is stopping" {
			t.Errorf("last event: got %+v, want shutdown, the daemon is stopping", ev)
		}
	})
}

// TestSandboxdWatchBurst: a burst larger than a stream's live buffer
// reaches the client whole, in order and once each: what the buffer drops
// is read back from the journal, which still keeps it (no overflow).
func TestSandboxdWatchBurst(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	j := h.srv.reg.Get("default").Journal()
	h.mkdir(t, "/b")
	s, _ := h.openWatch(t, "/v1/watch?path=/b", nil)
	const n = 3000 // over ten times the buffer, within what the journal keeps
	want := make([]string, n)
	for i := range n {
		p := fmt.Sprintf("/b/%d", i)
		j.AppendNow(journal.Event{Type: journal.Create, Path: p, Origin: journal.API})
		want[i] = "create " + p
	}
	got, _ := s.changes(t, fmt.Sprintf("/b/%d", n-1)) // an overflow event would fail it
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("burst: got %d changes, want %d in order, once each", len(got), n)
	}
	t.Logf("the live buffer dropped %d events, read back from the journal", j.Dropped()) // how much the read-back covered: timing, not asserted
}
