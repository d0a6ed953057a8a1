package rest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/rest/aio"
)

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

// apiMkdir makes a directory through the API, so that its create is in the
// journal before the next step (an outside mkdir is told when the kernel
// watch reads it, which may be after a watcher made next exists).
func (h *harness) apiMkdir(t *testing.T, p string) {
	t.Helper()
	wantStatus(t, h.do(t, req{Method: "POST", Target: "/v1/fs/mkdir?path=" + p}), 200)
}
