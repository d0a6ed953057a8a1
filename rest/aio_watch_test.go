package rest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/rest/aio"
)

func atLeast(n int) func([]aio.WatchEvent) bool {
	return func(es []aio.WatchEvent) bool { return len(es) >= n }
}

// wantEv is what a test checks of one event; empty fields are not checked
// except OldPath, which must match exactly.
type wantEv struct {
	Type, Path, Rel, OldPath, Origin string
	IsDir                            bool
}

func (w wantEv) String() string {
	s := w.Type + " " + w.Path + " (" + w.Rel + ") " + w.Origin
	if w.OldPath != "" {
		s += " <- " + w.OldPath
	}
	return s
}

func wantEvents(t *testing.T, got []aio.WatchEvent, want []wantEv) {
	t.Helper()
	gs := make([]string, len(got))
	for i, e := range got {
		gs[i] = evString(e)
	}
	if len(got) != len(want) {
		t.Fatalf("events: got %d:\n  %s\nwant %d:\n  %s", len(got), strings.Join(gs, "\n  "), len(want), fmtWant(want))
	}
	for i, w := range want {
		checkEvent(t, got[i], w)
	}
	for i := 1; i < len(got); i++ {
		if got[i].Seq <= got[i-1].Seq {
			t.Errorf("seq not increasing: %d after %d", got[i].Seq, got[i-1].Seq)
		}
	}
}

func fmtWant(want []wantEv) string {
	ws := make([]string, len(want))
	for i, w := range want {
		ws[i] = w.String()
	}
	return strings.Join(ws, "\n  ")
}

func checkEvent(t *testing.T, e aio.WatchEvent, w wantEv) {
	t.Helper()
	if e.Type != w.Type || e.Path != w.Path || e.RelativePath != w.Rel || e.OldPath != w.OldPath || e.Origin != w.Origin || e.IsDir != w.IsDir {
		t.Errorf("event %d: got %s dir=%v, want %s dir=%v", e.Seq, evString(e), e.IsDir, w, w.IsDir)
	}
	if e.Seq == 0 || e.Timestamp < 1e9 {
		t.Errorf("event %s: seq %d timestamp %v", evString(e), e.Seq, e.Timestamp)
	}
	if e.Type != "remove" && (e.Inode == 0 || e.Mtime < 1e9) {
		t.Errorf("event %s: inode %d mtime %v, want both set", evString(e), e.Inode, e.Mtime)
	}
	if e.Origin != "fuse" && (e.Pid != nil || e.Uid != nil) {
		t.Errorf("event %s: pid/uid on a non-fuse event", evString(e))
	}
}

// TestWatchScenarios runs changes made through the API and directly in the
// root through the routes, with the real kernel watch.
func TestWatchScenarios(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, h *harness) // before the watcher
		act   func(t *testing.T, h *harness)
		want  []wantEv
	}{
		{
			name: "API write of a new file",
			act: func(t *testing.T, h *harness) {
				wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/dir/new.txt", Body: jsonBody("hello")}), 200)
			},
			setup: func(t *testing.T, h *harness) { h.apiMkdir(t, "/dir") },
			want:  []wantEv{{Type: "create", Path: "/dir/new.txt", Rel: "dir/new.txt", Origin: "api"}, {Type: "write", Path: "/dir/new.txt", Rel: "dir/new.txt", Origin: "api"}},
		},
		{
			name:  "API move",
			setup: func(t *testing.T, h *harness) { h.writeFile(t, "/src.txt", "x") },
			act: func(t *testing.T, h *harness) {
				wantStatus(t, h.do(t, req{Method: "POST", Target: "/v1/fs/move", Body: jsonBody(`{"from":"/src.txt","to":"/dst.txt"}`)}), 200)
			},
			want: []wantEv{{Type: "rename", Path: "/dst.txt", Rel: "dst.txt", OldPath: "/src.txt", Origin: "api"}},
		},
		{
			name: "outside create and write",
			act:  func(t *testing.T, h *harness) { h.writeFile(t, "/ext.txt", "outside") },
			want: []wantEv{{Type: "create", Path: "/ext.txt", Rel: "ext.txt", Origin: "external"}, {Type: "write", Path: "/ext.txt", Rel: "ext.txt", Origin: "external"}},
		},
		{
			name:  "outside rename",
			setup: func(t *testing.T, h *harness) { h.writeFile(t, "/a.txt", "a") },
			act: func(t *testing.T, h *harness) {
				if err := os.Rename(h.host("/a.txt"), h.host("/b.txt")); err != nil {
					t.Fatal(err)
				}
			},
			want: []wantEv{{Type: "rename", Path: "/b.txt", Rel: "b.txt", OldPath: "/a.txt", Origin: "external"}},
		},
		{
			name:  "outside remove",
			setup: func(t *testing.T, h *harness) { h.writeFile(t, "/gone.txt", "a") },
			act: func(t *testing.T, h *harness) {
				if err := os.Remove(h.host("/gone.txt")); err != nil {
					t.Fatal(err)
				}
			},
			want: []wantEv{{Type: "remove", Path: "/gone.txt", Rel: "gone.txt", Origin: "external"}},
		},
		{
			name: "directory arriving with files in it",
			act: func(t *testing.T, h *harness) {
				staging := filepath.Join(t.TempDir(), "d")
				for _, p := range []string{"d/sub"} {
					os.MkdirAll(filepath.Join(filepath.Dir(staging), p), 0o755)
				}
				for _, f := range []string{"f1", "f2", "sub/f3"} {
					if err := os.WriteFile(filepath.Join(staging, f), []byte(f), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Rename(staging, h.host("/d")); err != nil {
					t.Fatal(err)
				}
			},
			want: []wantEv{
				{Type: "create", Path: "/d", Rel: "d", Origin: "external", IsDir: true},
				{Type: "create", Path: "/d/f1", Rel: "d/f1", Origin: "external"},
				{Type: "create", Path: "/d/f2", Rel: "d/f2", Origin: "external"},
				{Type: "create", Path: "/d/sub", Rel: "d/sub", Origin: "external", IsDir: true},
				{Type: "create", Path: "/d/sub/f3", Rel: "d/sub/f3", Origin: "external"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			h, _ := newWatchHarness(t)
			if c.setup != nil {
				c.setup(t, h)
			}
			w := h.createWatch(t, `{"path":"/","debounce":50}`)
			// Let the kernel echoes of the setup pass the watcher's cursor.
			time.Sleep(100 * time.Millisecond)
			start := h.pollWatch(t, w.WatcherID, w.InitialCursor, 0).Cursor
			c.act(t, h)
			got, _ := h.collect(t, w.WatcherID, start, atLeast(len(c.want)), 1)
			if c.name == "directory arriving with files in it" {
				sort.Slice(got, func(i, j int) bool { return got[i].Path < got[j].Path })
			}
			wantEvents(t, got, c.want)
		})
	}
}

// TestWatchOutsideAppendAfterAPIWrite: an outside edit right after an API
// write of the same path is told, as external.
func TestWatchOutsideAppendAfterAPIWrite(t *testing.T) {
	h, _ := newWatchHarness(t)
	w := h.createWatch(t, `{"path":"/","debounce":50}`)
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/ap.txt", Body: jsonBody("api\n")}), 200)
	f, err := os.OpenFile(h.host("/ap.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("outside\n")
	f.Close()
	got, _ := h.collect(t, w.WatcherID, w.InitialCursor, func(es []aio.WatchEvent) bool {
		return len(es) > 0 && es[len(es)-1].Origin == "external"
	}, 1)
	if len(got) < 2 {
		t.Fatalf("events: got %d, want the API create and an external write", len(got))
	}
	checkEvent(t, got[0], wantEv{Type: "create", Path: "/ap.txt", Rel: "ap.txt", Origin: "api"})
	last := got[len(got)-1]
	checkEvent(t, last, wantEv{Type: "write", Path: "/ap.txt", Rel: "ap.txt", Origin: "external"})
	if last.Size != int64(len("api\noutside\n")) {
		t.Errorf("external write: size %d, want %d", last.Size, len("api\noutside\n"))
	}
	for _, e := range got[1 : len(got)-1] {
		if e.Origin != "api" || e.Type != "write" {
			t.Errorf("between the create and the external write: %s", evString(e))
		}
	}
}

// TestWatchCursor: cursor 0 replays what the watcher holds; initial_cursor
// means from now (a reusing create's initial_cursor skips what came before).
func TestWatchCursor(t *testing.T) {
	h, _ := newWatchHarness(t)
	w1 := h.createWatch(t, `{"path":"/","debounce":50}`)
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/one", Body: jsonBody("1")}), 200)
	h.collect(t, w1.WatcherID, w1.InitialCursor, atLeast(2), 0)
	w2 := h.createWatch(t, `{"path":"/","debounce":50}`)
	if sharedID(w2.WatcherID) != sharedID(w1.WatcherID) || w2.WatcherID == w1.WatcherID || !w2.Reused || w1.Reused {
		t.Fatalf("second create: got %+v, want watcher %s reused", w2, w1.WatcherID)
	}
	if w2.InitialCursor <= w1.InitialCursor {
		t.Errorf("reused initial_cursor: got %d, want past %d", w2.InitialCursor, w1.InitialCursor)
	}
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/two", Body: jsonBody("2")}), 200)
	fromNow, _ := h.collect(t, w2.WatcherID, w2.InitialCursor, atLeast(2), 0)
	wantEvents(t, fromNow, []wantEv{{Type: "create", Path: "/two", Rel: "two", Origin: "api"}, {Type: "write", Path: "/two", Rel: "two", Origin: "api"}})
	replay, _ := h.collect(t, w2.WatcherID, 0, atLeast(4), 0)
	wantEvents(t, replay, []wantEv{
		{Type: "create", Path: "/one", Rel: "one", Origin: "api"}, {Type: "write", Path: "/one", Rel: "one", Origin: "api"},
		{Type: "create", Path: "/two", Rel: "two", Origin: "api"}, {Type: "write", Path: "/two", Rel: "two", Origin: "api"},
	})
}

// TestWatchFile: a file may be watched; its events name it relative to its
// directory, and its siblings are not told.
func TestWatchFile(t *testing.T) {
	h, sb := newWatchHarness(t)
	h.writeFile(t, "/d/f.txt", "x")
	h.writeFile(t, "/d/other.txt", "x")
	settleOutside(t, h, sb)
	w := h.createWatch(t, `{"path":"/d/f.txt","debounce":50}`)
	if w.Path != "/d/f.txt" || w.Status != "active" {
		t.Errorf("create: got %+v", w)
	}
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/d/other.txt", Body: jsonBody("y")}), 200)
	wantStatus(t, h.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/d/f.txt", Body: jsonBody("y")}), 200)
	got, _ := h.collect(t, w.WatcherID, w.InitialCursor, atLeast(1), 1)
	wantEvents(t, got, []wantEv{{Type: "write", Path: "/d/f.txt", Rel: "f.txt", Origin: "api"}})
}

// TestWatchRoutes checks every watch route's success and documented
// failures, in both versions.
func TestWatchRoutes(t *testing.T) {
	h, _ := newWatchHarness(t)
	h.writeFile(t, "/file.txt", "x")
	h.apiMkdir(t, "/dir")

	t.Run("create", func(t *testing.T) {
		var refs []string
		for _, target := range []string{"/v2/watch", "/v1/file/watch"} {
			before := time.Now().Add(-time.Second)
			r := h.do(t, req{Method: "POST", Target: target, Body: jsonBody(`{"path":"dir/../dir/","recursive":false,"debounce":120,"exclude":[],"include_patterns":["*.go"]}`)})
			w := wantAIO[aio.WatchCreated](t, r)
			if !strings.HasPrefix(w.WatcherID, "w_") || w.Path != "/dir" || w.Status != "active" {
				t.Errorf("%s: got %+v", target, w)
			}
			ts, err := time.Parse(time.RFC3339Nano, w.CreatedAt)
			if err != nil || ts.Before(before) || ts.After(time.Now().Add(time.Second)) {
				t.Errorf("%s: created_at %q: %v", target, w.CreatedAt, err)
			}
			if target == "/v2/watch" && w.Reused || target == "/v1/file/watch" && !w.Reused {
				t.Errorf("%s: reused %v", target, w.Reused)
			}
			refs = append(refs, w.WatcherID)
		}
		// The list shows each client's own reference (as an AIO client looks
		// its watcher_id up there), both of one shared watcher.
		list := wantAIO[aio.WatchList](t, h.do(t, req{Method: "GET", Target: "/v1/file/watch"}))
		if list.Count != 2 || len(list.Watchers) != 2 {
			t.Fatalf("list: got %+v, want the two references", list)
		}
		for i, wi := range list.Watchers {
			if wi.WatcherID != refs[i] || wi.Path != "/dir" || wi.Recursive || wi.Debounce != 120 || len(wi.Exclude) != 0 ||
				strings.Join(wi.IncludePatterns, ",") != "*.go" || wi.Subscribers != 2 {
				t.Errorf("list entry %d: got %+v, want reference %s", i, wi, refs[i])
			}
		}
		// Each create is its own reference, an alias of the shared watcher
		// that polls and is released once: a second DELETE of one, or one
		// of the shared id, is 404 and leaves the other's reference alone.
		wi := aio.WatchInfo{WatcherID: sharedID(refs[0])}
		if refs[0] != wi.WatcherID+".1" || refs[1] != wi.WatcherID+".2" {
			t.Errorf("references %q of watcher %s", refs, wi.WatcherID)
		}
		for i, st := range []struct {
			target string
			status int
			want   aio.WatchStopped
		}{
			{"/v2/watch/" + wi.WatcherID, 404, aio.WatchStopped{}},
			{"/v2/watch/" + refs[0], 200, aio.WatchStopped{WatcherID: refs[0], Status: "active", Subscribers: 1}},
			{"/v1/file/watch/" + refs[0], 404, aio.WatchStopped{}},
			{"/v2/watch/" + refs[0], 404, aio.WatchStopped{}},
			{"/v1/file/watch/" + refs[1], 200, aio.WatchStopped{WatcherID: refs[1], Status: "stopped", Subscribers: 0}},
			{"/v2/watch/" + refs[1], 404, aio.WatchStopped{}},
		} {
			r := h.do(t, req{Method: "DELETE", Target: st.target})
			if st.status == 404 {
				wantAIOError(t, r, 404, "not_found")
				continue
			}
			if got := wantAIO[aio.WatchStopped](t, r); got != st.want {
				t.Errorf("DELETE %d %s: got %+v, want %+v", i, st.target, got, st.want)
			}
			if i == 1 { // the other reference still polls
				wantAIO[aio.WatchBatch](t, h.do(t, req{Method: "GET", Target: "/v2/watch/" + refs[1] + "/poll"}))
			}
		}
		list = wantAIO[aio.WatchList](t, h.do(t, req{Method: "GET", Target: "/v2/watch"}))
		if list.Count != 0 || list.Watchers == nil {
			t.Errorf("list after stop: got %+v, want an empty list", list)
		}
	})

	t.Run("defaults", func(t *testing.T) {
		w := h.createWatch(t, `{"path":"/"}`)
		defer h.do(t, req{Method: "DELETE", Target: "/v2/watch/" + w.WatcherID})
		list := wantAIO[aio.WatchList](t, h.do(t, req{Method: "GET", Target: "/v2/watch"}))
		wi := list.Watchers[0]
		if !wi.Recursive || wi.Debounce != 300 || strings.Join(wi.Exclude, ",") != strings.Join(journal.DefaultExcludes, ",") || len(wi.IncludePatterns) != 0 {
			t.Errorf("defaults: got %+v", wi)
		}
	})

	t.Run("create failures", func(t *testing.T) {
		cases := []struct {
			name, body string
			v1, v2     int // statuses
			errorType  string
			validation string // location of a 422
		}{
			{"debounce 49", `{"path":"/","debounce":49}`, 400, 400, "invalid_request", ""},
			{"debounce 5001", `{"path":"/","debounce":5001}`, 400, 400, "invalid_request", ""},
			{"bad exclude glob", `{"path":"/","exclude":["[a"]}`, 400, 400, "invalid_request", ""},
			{"bad include glob", `{"path":"/","include_patterns":["a["]}`, 400, 400, "invalid_request", ""},
			{"empty path", `{"path":""}`, 400, 400, "invalid_path", ""},
			{"NUL in path", `{"path":"/a\u0000b"}`, 400, 400, "invalid_path", ""},
			{"missing path", `{"path":"/nope"}`, 200, 404, "not_found", ""},
			{"malformed JSON", `{"path":`, 422, 422, "", "body"},
			{"not an object", `[1]`, 422, 422, "", "body"},
			{"no path field", `{"recursive":true}`, 422, 422, "", "body.path"},
			{"path of the wrong type", `{"path":1}`, 422, 422, "", "body.path"},
			{"debounce of the wrong type", `{"path":"/","debounce":"x"}`, 422, 422, "", "body.debounce"},
			{"empty body", ``, 422, 422, "", "body"},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				for _, v := range []struct {
					target string
					status int
				}{{"/v1/file/watch", c.v1}, {"/v2/watch", c.v2}} {
					r := h.do(t, req{Method: "POST", Target: v.target, Body: jsonBody(c.body)})
					if c.validation != "" {
						if r.Status != 422 {
							t.Fatalf("%s: got %d, want 422: %s", v.target, r.Status, r.Body)
						}
						continue
					}
					f := wantAIOError(t, r, v.status, c.errorType)
					if c.errorType == "not_found" {
						wantErrno(t, f, unix.ENOENT, "FileNotFoundError")
						if f.Path != "/nope" || f.Operation != "stat" || f.Retryable {
							t.Errorf("%s: data %+v", v.target, f)
						}
					}
					if c.errorType == "invalid_request" && f.Operation != "watch_create" {
						t.Errorf("%s: operation %q, want watch_create", v.target, f.Operation)
					}
				}
			})
		}
		wantValidation(t, h.do(t, req{Method: "POST", Target: "/v2/watch", Body: jsonBody(`{"recursive":true}`)}), "body.path", "missing")
		wantValidation(t, h.do(t, req{Method: "POST", Target: "/v2/watch", Body: jsonBody(`{"path":`)}), "body", "json_invalid")
		wantValidation(t, h.do(t, req{Method: "POST", Target: "/v1/file/watch", Body: jsonBody(`{"path":true}`)}), "body.path", "string_type")
		if n := len(wantAIO[aio.WatchList](t, h.do(t, req{Method: "GET", Target: "/v2/watch"})).Watchers); n != 0 {
			t.Errorf("failed creates left %d watchers", n)
		}
	})

	t.Run("bounds that pass", func(t *testing.T) {
		for _, d := range []int{50, 5000} {
			w := h.createWatch(t, fmt.Sprintf(`{"path":"/file.txt","debounce":%d}`, d))
			wantAIO[aio.WatchStopped](t, h.do(t, req{Method: "DELETE", Target: "/v2/watch/" + w.WatcherID}))
		}
	})

	t.Run("poll", func(t *testing.T) {
		w := h.createWatch(t, `{"path":"/","debounce":50}`)
		defer h.do(t, req{Method: "DELETE", Target: "/v2/watch/" + w.WatcherID})
		id := w.WatcherID
		v2 := func(q string) resp { return h.do(t, req{Method: "GET", Target: "/v2/watch/" + id + "/poll" + q}) }
		v1 := func(body string) resp {
			return h.do(t, req{Method: "POST", Target: "/v1/file/watch/" + id + "/poll", Body: jsonBody(body)})
		}
		// Success shapes, empty.
		for name, r := range map[string]resp{
			"v2 no query": v2(""), "v2 limit 10000": v2("?limit=10000&timeout=0&cursor=0"),
			"v1 empty body": v1(""), "v1 {}": v1("{}"), "v1 limit 1000": v1(`{"limit":1000,"timeout":0,"cursor":0}`),
		} {
			b := wantAIO[aio.WatchBatch](t, r)
			if b.Events == nil || len(b.Events) != 0 || b.Overflow {
				t.Errorf("%s: got %+v, want no events", name, b)
			}
		}
		// Long-poll: answers when the event comes, before the timeout.
		go func() {
			time.Sleep(300 * time.Millisecond)
			os.WriteFile(h.host("/lp.txt"), []byte("x"), 0o644)
		}()
		start := time.Now()
		b := wantAIO[aio.WatchBatch](t, v1(fmt.Sprintf(`{"cursor":%d,"timeout":10}`, w.InitialCursor)))
		if len(b.Events) == 0 || time.Since(start) > 8*time.Second {
			t.Errorf("long-poll: got %d events after %v", len(b.Events), time.Since(start))
		} else if b.Cursor != b.Events[len(b.Events)-1].Seq {
			t.Errorf("cursor: got %d, want the last seq %d", b.Cursor, b.Events[len(b.Events)-1].Seq)
		}
		// A limit cuts the batch.
		time.Sleep(200 * time.Millisecond)
		b = wantAIO[aio.WatchBatch](t, v2("?limit=1&cursor=0"))
		if len(b.Events) != 1 {
			t.Errorf("limit 1: got %d events", len(b.Events))
		}
		// Failures.
		for name, c := range map[string]struct {
			r      resp
			status int
			typ    string
		}{
			"v2 limit 0":      {v2("?limit=0"), 400, "invalid_request"},
			"v2 limit 10001":  {v2("?limit=10001"), 400, "invalid_request"},
			"v2 timeout 61":   {v2("?timeout=61"), 400, "invalid_request"},
			"v2 timeout -1":   {v2("?timeout=-1"), 400, "invalid_request"},
			"v2 cursor -1":    {v2("?cursor=-1"), 400, "invalid_request"},
			"v1 limit 0":      {v1(`{"limit":0}`), 400, "invalid_request"},
			"v1 limit 1001":   {v1(`{"limit":1001}`), 400, "invalid_request"},
			"v1 timeout 61":   {v1(`{"timeout":61}`), 400, "invalid_request"},
			"v1 cursor -1":    {v1(`{"cursor":-1}`), 400, "invalid_request"},
			"v2 unknown":      {h.do(t, req{Method: "GET", Target: "/v2/watch/w_nope/poll"}), 404, "not_found"},
			"v1 unknown":      {h.do(t, req{Method: "POST", Target: "/v1/file/watch/w_nope/poll", Body: jsonBody("{}")}), 404, "not_found"},
			"v2 events known": {h.do(t, req{Method: "GET", Target: "/v2/watch/w_nope/events"}), 404, "not_found"},
			"v1 events known": {h.do(t, req{Method: "GET", Target: "/v1/file/watch/w_nope/events"}), 404, "not_found"},
		} {
			t.Run(name, func(t *testing.T) {
				f := wantAIOError(t, c.r, c.status, c.typ)
				if f.Errno != nil || f.Operation == "" {
					t.Errorf("data: got %+v, want no errno and an operation", f)
				}
			})
		}
		wantValidation(t, v2("?limit=abc"), "query.limit", "int_parsing")
		wantValidation(t, v1(`{"limit":`), "body", "json_invalid")
		wantValidation(t, v1(`{"limit":"x"}`), "body.limit", "int_type")
	})

	t.Run("poll ends when the watcher stops", func(t *testing.T) {
		w := h.createWatch(t, `{"path":"/dir","debounce":60}`)
		go func() {
			time.Sleep(300 * time.Millisecond)
			h.do(t, req{Method: "DELETE", Target: "/v2/watch/" + w.WatcherID})
		}()
		r := h.do(t, req{Method: "GET", Target: "/v2/watch/" + w.WatcherID + "/poll?timeout=30"})
		wantAIOError(t, r, 404, "not_found")
	})

	t.Run("429 at the 129th watcher", func(t *testing.T) {
		var ids []string
		for i := range journal.MaxWatchers {
			w := h.createWatch(t, fmt.Sprintf(`{"path":"/","debounce":%d}`, 100+i))
			ids = append(ids, w.WatcherID)
		}
		// An identical create still reuses.
		reuse := h.createWatch(t, `{"path":"/","debounce":100}`)
		if !reuse.Reused || sharedID(reuse.WatcherID) != sharedID(ids[0]) || reuse.WatcherID == ids[0] {
			t.Errorf("reuse at the limit: got %+v", reuse)
		}
		for _, target := range []string{"/v2/watch", "/v1/file/watch"} {
			r := h.do(t, req{Method: "POST", Target: target, Body: jsonBody(`{"path":"/","debounce":99}`)})
			f := wantAIOError(t, r, 429, "too_many_watchers")
			if !f.Retryable || f.Operation != "watch_create" {
				t.Errorf("%s: data %+v", target, f)
			}
		}
		h.do(t, req{Method: "DELETE", Target: "/v2/watch/" + ids[1]})
		ids[1] = h.createWatch(t, `{"path":"/","debounce":99}`).WatcherID
		h.do(t, req{Method: "DELETE", Target: "/v2/watch/" + reuse.WatcherID})
		for _, id := range ids {
			wantAIO[aio.WatchStopped](t, h.do(t, req{Method: "DELETE", Target: "/v2/watch/" + id}))
		}
	})

	t.Run("wait", func(t *testing.T) {
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() { // keep writing until the wait has answered
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				os.WriteFile(h.host("/dir/w.txt"), []byte(strconv.Itoa(i)), 0o644)
				os.WriteFile(h.host("/dir/other.txt"), []byte(strconv.Itoa(i)), 0o644)
			}
		}()
		r := h.do(t, req{Method: "POST", Target: "/v1/file/watch/wait", Body: jsonBody(`{"path":"/dir/w.txt","timeout":10,"event_types":["write"]}`)})
		close(stop)
		<-done
		e := wantAIO[aio.WatchEvent](t, r)
		checkEvent(t, e, wantEv{Type: "write", Path: "/dir/w.txt", Rel: "w.txt", Origin: "external"})

		start := time.Now()
		r = h.do(t, req{Method: "POST", Target: "/v1/file/watch/wait", Body: jsonBody(`{"path":"/dir/never","timeout":1}`)})
		f := wantAIOError(t, r, 503, "timeout")
		if time.Since(start) < 900*time.Millisecond || !f.Retryable || f.Operation != "watch_wait" || *f.ExceptionType != "TimeoutError" {
			t.Errorf("timeout after %v: data %+v", time.Since(start), f)
		}
		for _, body := range []string{`{"path":"/x","timeout":0}`, `{"path":"/x","timeout":301}`, `{"path":""}`} {
			wantAIOError(t, h.do(t, req{Method: "POST", Target: "/v1/file/watch/wait", Body: jsonBody(body)}), 400, map[bool]string{true: "invalid_path", false: "invalid_request"}[strings.Contains(body, `""`)])
		}
		wantValidation(t, h.do(t, req{Method: "POST", Target: "/v1/file/watch/wait", Body: jsonBody(`{"timeout":1}`)}), "body.path", "missing")
		wantValidation(t, h.do(t, req{Method: "POST", Target: "/v1/file/watch/wait", Body: jsonBody(`{"path":"/x","event_types":["write","bogus"]}`)}), "body.event_types.1", "enum")
		wantValidation(t, h.do(t, req{Method: "POST", Target: "/v1/file/watch/wait", Body: jsonBody(`nope`)}), "body", "json_invalid")
	})
}

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

// apiMkdir makes a directory through the API, so that its create is in the
// journal before the next step (an outside mkdir is told when the kernel
// watch reads it, which may be after a watcher made next exists).
func (h *harness) apiMkdir(t *testing.T, p string) {
	t.Helper()
	wantStatus(t, h.do(t, req{Method: "POST", Target: "/v1/fs/mkdir?path=" + p}), 200)
}
