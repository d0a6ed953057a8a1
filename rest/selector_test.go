package rest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"sandfs/api"
	"sandfs/core"
	"sandfs/internal/testenv"
	"sandfs/rest/aio"
)

// regHarness is a Server over a real Registry holding sandboxes
// "default", "a" and "b", each a real core.Sandbox in its own temp dir
// holding a file "who" that names it.
type regHarness struct {
	*harness
	reg   *Registry
	roots map[string]string
}

type regOpts struct {
	Token     string            // the daemon's token
	Tokens    map[string]string // sandbox → its own token
	Manager   func(*regHarness) Manager
	Placement Placement // placement_test.go
}

func newRegHarness(t *testing.T, o regOpts) *regHarness {
	t.Helper()
	rh := &regHarness{reg: NewRegistry(), roots: map[string]string{}}
	for _, name := range []string{"default", "a", "b"} {
		rh.addSandbox(t, name, o.Tokens[name])
	}
	h := &harness{root: rh.roots["default"], token: o.Token, logs: &testenv.Buffer{}, served: make(chan struct{}, 64)}
	rh.harness = h
	cfg := Config{Registry: rh.reg, Token: o.Token, Placement: o.Placement, Log: slog.New(slog.NewTextHandler(h.logs, nil))}
	if o.Manager != nil {
		cfg.Manager = o.Manager(rh)
	}
	var err error
	if h.srv, err = New(cfg); err != nil {
		t.Fatal(err)
	}
	h.start(t)
	return rh
}

// addSandbox opens a real sandbox name in a new temp dir, its file "who"
// holding its name, and adds it to the registry.
func (rh *regHarness) addSandbox(t *testing.T, name, token string) *core.Sandbox {
	t.Helper()
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "who"), []byte(name), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := core.Open(name, root, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	if err := rh.reg.Add(name, sb, token); err != nil {
		t.Fatal(err)
	}
	rh.roots[name] = root
	return sb
}

func (rh *regHarness) wantOnDisk(t *testing.T, sandbox, p, content string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(rh.roots[sandbox], p))
	if err != nil {
		t.Errorf("%s:%s: %v", sandbox, p, err)
		return
	}
	if string(b) != content {
		t.Errorf("%s:%s: got %q, want %q", sandbox, p, b, content)
	}
}

func (rh *regHarness) wantNotOnDisk(t *testing.T, sandbox, p string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(rh.roots[sandbox], p)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s:%s: exists (%v), want absent", sandbox, p, err)
	}
}

// whoRead is a read of the file "who" on each family, and how to take the
// content from its answer.
type whoRead struct {
	family string
	req    func(sel map[string]string, query string) req
	got    func(t *testing.T, r resp) string
}

func whoReads() []whoRead {
	q := func(query string) string {
		if query == "" {
			return ""
		}
		return "&" + query
	}
	return []whoRead{
		{FamilyAgent, func(sel map[string]string, query string) req {
			return req{Method: "GET", Target: "/v1/fs/file?path=/who" + q(query), Header: sel}
		}, func(t *testing.T, r resp) string { wantStatus(t, r, 200); return string(r.Body) }},
		{FamilyAIOv2, func(sel map[string]string, query string) req {
			return req{Method: "GET", Target: "/v2/fs/read?path=/who" + q(query), Header: sel}
		}, func(t *testing.T, r resp) string { return wantAIO[aio.FileReadResult](t, r).Content }},
		{FamilyAIOv1, func(sel map[string]string, query string) req {
			target := "/v1/file/read"
			if query != "" {
				target += "?" + query
			}
			return req{Method: "POST", Target: target, Body: jsonBody(`{"file":"/who"}`), Header: sel}
		}, func(t *testing.T, r resp) string { return wantAIO[aio.FileReadResult](t, r).Content }},
	}
}

// TestSandboxSelector: the agent and AIO routes act on the sandbox the
// header or the query names, "default" without one; an unknown name is 404
// in the family's shape and a header and a query that disagree 400.
func TestSandboxSelector(t *testing.T) {
	rh := newRegHarness(t, regOpts{})
	cases := []struct {
		name   string
		header map[string]string
		query  string
		want   string // the sandbox read; "" = refused
		status int
	}{
		{"implicit", nil, "", "default", 200},
		{"header", map[string]string{"X-Sandfs-Sandbox": "a"}, "", "a", 200},
		{"query", nil, "sandbox=b", "b", 200},
		{"header and query agree", map[string]string{"X-Sandfs-Sandbox": "b"}, "sandbox=b", "b", 200},
		{"header default", map[string]string{"X-Sandfs-Sandbox": "default"}, "", "default", 200},
		{"unknown header", map[string]string{"X-Sandfs-Sandbox": "zz"}, "", "", 404},
		{"unknown query", nil, "sandbox=zz", "", 404},
		{"header and query disagree", map[string]string{"X-Sandfs-Sandbox": "a"}, "sandbox=b", "", 400},
	}
	for _, f := range whoReads() {
		for _, c := range cases {
			t.Run(f.family+"/"+c.name, func(t *testing.T) {
				r := rh.do(t, f.req(c.header, c.query))
				if c.want != "" {
					if got := f.got(t, r); got != c.want {
						t.Errorf("read who: got %q, want %q", got, c.want)
					}
					return
				}
				if r.Status != c.status {
					t.Fatalf("status: got %d, want %d (%s)", r.Status, c.status, r.Body)
				}
				if err := checkFamilyShape(f.family, r); err != nil {
					t.Errorf("shape: %v (%s)", err, r.Body)
				}
				if c.status == 404 && !strings.Contains(string(r.Body), `\"zz\" is not served`) {
					t.Errorf("body %s: want it to name the sandbox zz", r.Body)
				}
			})
		}
	}
	t.Run("named unknown", func(t *testing.T) {
		for _, prefix := range namedPrefixes {
			wantNamedError(t, rh.do(t, req{Method: "GET", Target: prefix + "zz/fs/read?path=/who"}), 404, "ENOENT", "zz")
		}
	})
	t.Run("write lands in the selected sandbox only", func(t *testing.T) {
		r := rh.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/new", Body: strings.NewReader("for a"),
			Header: map[string]string{"X-Sandfs-Sandbox": "a", "Content-Type": "application/octet-stream"}})
		wantStatus(t, r, 200)
		r = rh.do(t, req{Method: "POST", Target: "/v2/fs/write?sandbox=b", Body: jsonBody(`{"path":"/new","content":"for b"}`)})
		wantAIO[aio.FileWriteResult](t, r)
		rh.wantOnDisk(t, "a", "new", "for a")
		rh.wantOnDisk(t, "b", "new", "for b")
		rh.wantNotOnDisk(t, "default", "new")
		r = rh.do(t, req{Method: "POST", Target: "/v2/fs/write", Body: jsonBody(`{"path":"/other","content":"x"}`),
			Header: map[string]string{"X-Sandfs-Sandbox": "zz"}})
		if r.Status != 404 {
			t.Errorf("write to zz: status %d, want 404", r.Status)
		}
		for _, sb := range []string{"default", "a", "b"} {
			rh.wantNotOnDisk(t, sb, "other")
		}
	})
	t.Run("watchers live in their sandbox", func(t *testing.T) {
		a := map[string]string{"X-Sandfs-Sandbox": "a"}
		w := wantAIO[aio.WatchCreated](t, rh.do(t, req{Method: "POST", Target: "/v2/watch", Body: jsonBody(`{"path":"/"}`), Header: a}))
		list := wantAIO[aio.WatchList](t, rh.do(t, req{Method: "GET", Target: "/v2/watch", Header: a}))
		if list.Count != 1 || list.Watchers[0].WatcherID != w.WatcherID {
			t.Errorf("a's watchers: got %+v, want %s", list, w.WatcherID)
		}
		if list := wantAIO[aio.WatchList](t, rh.do(t, req{Method: "GET", Target: "/v2/watch"})); list.Count != 0 {
			t.Errorf("default's watchers: got %+v, want none", list)
		}
		wantAIOError(t, rh.do(t, req{Method: "GET", Target: "/v2/watch/" + w.WatcherID + "/poll?sandbox=b"}), 404, "not_found")
		b := wantAIO[aio.WatchBatch](t, rh.do(t, req{Method: "GET", Target: "/v2/watch/" + w.WatcherID + "/poll?sandbox=a&cursor=" + strconv.FormatUint(w.InitialCursor, 10)}))
		if b.Cursor != w.InitialCursor {
			t.Errorf("poll in a: cursor %d, want %d", b.Cursor, w.InitialCursor)
		}
		wantAIOError(t, rh.do(t, req{Method: "DELETE", Target: "/v2/watch/" + w.WatcherID}), 404, "not_found")
		st := wantAIO[aio.WatchStopped](t, rh.do(t, req{Method: "DELETE", Target: "/v2/watch/" + w.WatcherID, Header: a}))
		if st.Status != "stopped" {
			t.Errorf("stop in a: got %+v", st)
		}
	})
}

// TestRemovedSandbox: Registry.Remove ends the removed sandbox's streams
// at once with their last message (SSE shutdown, websocket 1001, the
// long-poll's batch, the wait's 503), waits for a request in flight on it,
// and afterwards every family answers 404; the other sandboxes go on.
func TestRemovedSandbox(t *testing.T) {
	rh := newRegHarness(t, regOpts{})
	a := map[string]string{"X-Sandfs-Sandbox": "a"}
	w := wantAIO[aio.WatchCreated](t, rh.do(t, req{Method: "POST", Target: "/v2/watch", Body: jsonBody(`{"path":"/"}`), Header: a}))
	cursor := strconv.FormatUint(w.InitialCursor, 10)
	sse := rh.openSSE(t, "/v2/watch/"+w.WatcherID+"/events?sandbox=a&cursor="+cursor, nil)
	if ev := sse.next(t); ev.Event != "watch_started" {
		t.Fatalf("first event: got %+v", ev)
	}
	nh := &namedHarness{harness: rh.harness}
	ws := nh.dialWatch(t, "/v1/sandboxes/a/fs/watch", nil)
	wsSend(t, ws, map[string]any{"type": "subscribe", "paths": []string{"/"}, "recursive": true})
	if m := wsRecv(t, ws, 5*time.Second); m.Type != "subscribed" {
		t.Fatalf("got %+v, want subscribed", m)
	}
	streams := []struct{ name, method, target, body string }{
		{"poll", "GET", "/v2/watch/" + w.WatcherID + "/poll?sandbox=a&timeout=60&cursor=" + cursor, ""},
		{"wait", "POST", "/v1/file/watch/wait?sandbox=a", `{"path":"/never","timeout":300}`},
	}
	answers := map[string]chan resp{}
	for _, c := range streams {
		ch := make(chan resp, 1)
		answers[c.name] = ch
		go func() { ch <- rh.do(t, req{Method: c.method, Target: c.target, Body: jsonBody(c.body)}) }()
	}
	// A slow request in flight: an upload whose body is still coming.
	pr, pw := io.Pipe()
	uploaded := make(chan resp, 1)
	go func() {
		uploaded <- rh.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/slow", Body: pr,
			Header: map[string]string{"X-Sandfs-Sandbox": "a", "Content-Type": "application/octet-stream"}})
	}()
	if _, err := pw.Write([]byte("first half,")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // every request inside its handler

	removed := make(chan *core.Sandbox, 1)
	go func() { removed <- rh.reg.Remove(context.Background(), "a") }()

	ev := sse.next(t)
	if sd := decodeJSONString[aio.SSEShutdown](t, ev.Data); ev.Event != "shutdown" || sd.Reason != "the sandbox was removed" || sd.Cursor != w.InitialCursor {
		t.Errorf("last SSE event: got %+v, want shutdown, the sandbox was removed", ev)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	_, _, err := ws.Read(ctx)
	cancel()
	var ce websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.StatusGoingAway || ce.Reason != "the sandbox was removed" {
		t.Errorf("websocket: got %v, want close 1001 the sandbox was removed", err)
	}
	for _, c := range streams {
		select {
		case r := <-answers[c.name]:
			if c.name == "poll" {
				if b := wantAIO[aio.WatchBatch](t, r); len(b.Events) != 0 || b.Cursor != w.InitialCursor {
					t.Errorf("poll: got %+v, want the empty batch at %d", b, w.InitialCursor)
				}
				continue
			}
			if f := wantAIOError(t, r, 503, "timeout"); !strings.Contains(f.Message, "the sandbox was removed") {
				t.Errorf("wait: got %+v", f)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%s: no answer 2 s after Remove", c.name)
		}
	}
	select {
	case <-removed:
		t.Fatal("Remove returned while a request was in flight on the sandbox")
	case <-time.After(300 * time.Millisecond):
	}
	if got := rh.reg.Get("a"); got != nil {
		t.Errorf("Get(a) after Remove: got a sandbox, want nil")
	}
	pw.Write([]byte("second half"))
	pw.Close()
	if r := <-uploaded; r.Status != 200 {
		t.Errorf("upload in flight: status %d (%s), want 200", r.Status, r.Body)
	}
	select {
	case sb := <-removed:
		if sb == nil || sb.Name() != "a" {
			t.Errorf("Remove: got %v, want sandbox a", sb)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Remove did not return 2 s after the last request ended")
	}
	rh.wantOnDisk(t, "a", "slow", "first half,second half")

	t.Run("after", func(t *testing.T) {
		for _, f := range whoReads() {
			r := rh.do(t, f.req(a, ""))
			if r.Status != 404 {
				t.Errorf("%s: status %d, want 404 (%s)", f.family, r.Status, r.Body)
			}
			if err := checkFamilyShape(f.family, r); err != nil {
				t.Errorf("%s: %v", f.family, err)
			}
			if got := f.got(t, rh.do(t, f.req(map[string]string{"X-Sandfs-Sandbox": "b"}, ""))); got != "b" {
				t.Errorf("%s: b reads %q, want b", f.family, got)
			}
		}
		for _, prefix := range namedPrefixes {
			wantNamedError(t, rh.do(t, req{Method: "GET", Target: prefix + "a/fs/read?path=/who"}), 404, "ENOENT", "a")
		}
		r := rh.do(t, req{Method: "GET", Target: "/v1/sandboxes"})
		if l := decode[api.SandboxList](t, r); l.Count != 2 || l.Sandboxes[0].Name != "default" || l.Sandboxes[1].Name != "b" {
			t.Errorf("GET /v1/sandboxes: got %+v, want default, b", l)
		}
		if rh.reg.Remove(context.Background(), "a") != nil {
			t.Errorf("a second Remove: got a sandbox, want nil")
		}
	})
	t.Run("ctx bounds the wait", func(t *testing.T) {
		pr, pw := io.Pipe()
		defer pw.Close()
		done := make(chan resp, 1)
		go func() {
			done <- rh.do(t, req{Method: "PUT", Target: "/v1/fs/file?path=/slow", Body: pr,
				Header: map[string]string{"X-Sandfs-Sandbox": "b", "Content-Type": "application/octet-stream"}})
		}()
		pw.Write([]byte("x"))
		time.Sleep(200 * time.Millisecond)
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		start := time.Now()
		if sb := rh.reg.Remove(ctx, "b"); sb == nil {
			t.Errorf("Remove(b): nil")
		}
		if took := time.Since(start); took < 150*time.Millisecond || took > 2*time.Second {
			t.Errorf("Remove with a 200 ms ctx took %v", took)
		}
		pw.Close()
		<-done
	})
}

// TestRegistryAddTaken: a name served twice is refused.
func TestRegistryAddTaken(t *testing.T) {
	rh := newRegHarness(t, regOpts{})
	if err := rh.reg.Add("a", rh.reg.Get("b"), ""); err == nil {
		t.Fatal("Add of a taken name: nil error")
	}
	if got := rh.reg.Names(); strings.Join(got, ",") != "default,a,b" {
		t.Errorf("Names: got %v", got)
	}
	_ = http.StatusOK
}

// TestRegistryChurn: 50 sandboxes added and removed one after the other
// while clients read a and b, and others read the churned names: each
// sandbox answers at once after Add and 404 at once after Remove, and no
// answer ever carries another sandbox's file.
func TestRegistryChurn(t *testing.T) {
	rh := newRegHarness(t, regOpts{})
	get := func(target string, header map[string]string) (int, string, error) {
		hr, _ := http.NewRequest("GET", rh.ts.URL+target, nil)
		for k, v := range header {
			hr.Header.Set(k, v)
		}
		res, err := rh.ts.Client().Do(hr)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, string(b), err
	}
	const churn = 50
	stop := make(chan struct{})
	errs := make(chan error, 64)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				var name, target string
				var hdr map[string]string
				switch (i + n) % 3 {
				case 0: // a steady sandbox, by the selector
					name = []string{"a", "b"}[n%2]
					target, hdr = "/v1/fs/file?path=/who", map[string]string{"X-Sandfs-Sandbox": name}
				case 1: // a steady sandbox, by the path
					name = []string{"a", "b"}[n%2]
					target = "/v1/sandboxes/" + name + "/fs/read?path=/who"
				default: // a churned one, maybe there
					name = fmt.Sprintf("s-%d", n%churn)
					target = "/v1/fs/file?path=/who&sandbox=" + name
				}
				status, body, err := get(target, hdr)
				switch {
				case err != nil:
					errs <- err
					return
				case status == 200 && body != name:
					errs <- fmt.Errorf("%s: read %q, want %q", target, body, name)
					return
				case status != 200 && (status != 404 || !strings.HasPrefix(name, "s-")):
					errs <- fmt.Errorf("%s: status %d %s", target, status, body)
					return
				}
			}
		}()
	}
	for i := range churn {
		name := fmt.Sprintf("s-%d", i)
		start := time.Now()
		rh.addSandbox(t, name, "")
		if status, body, _ := get("/v1/sandboxes/"+name+"/fs/read?path=/who", nil); status != 200 || body != name {
			t.Errorf("%s after Add: %d %q", name, status, body)
		}
		if status, body, _ := get("/v2/fs/read?path=/who", map[string]string{"X-Sandfs-Sandbox": name}); status != 200 || !strings.Contains(body, `"content":"`+name+`"`) {
			t.Errorf("%s after Add, by the selector: %d %s", name, status, body)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		sb := rh.reg.Remove(ctx, name)
		cancel()
		if sb == nil {
			t.Fatalf("Remove(%s): nil", name)
		}
		if status, _, _ := get("/v1/sandboxes/"+name+"/fs/read?path=/who", nil); status != 404 {
			t.Errorf("%s after Remove: status %d, want 404", name, status)
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("%s: add, read and remove took %v", name, took)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := strings.Join(rh.reg.Names(), ","); got != "default,a,b" {
		t.Errorf("served after the churn: %s", got)
	}
}
