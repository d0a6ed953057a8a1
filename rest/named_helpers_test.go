package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"sandfs/core"
	"sandfs/internal/testenv"
	"sandfs/rest/named"
)

// The named family's test helpers: its harness, its errors, and its
// websocket watch.

type namedHarness struct {
	*harness
	other   string // host root of "other"
	def, ob *core.Sandbox
}

func newNamedHarness(t *testing.T) *namedHarness {
	return newNamedHarnessWith(t, core.Options{})
}

// newNamedHarnessWith opens sandbox default with o.
func newNamedHarnessWith(t *testing.T, o core.Options) *namedHarness {
	t.Helper()
	root, other := t.TempDir(), t.TempDir()
	def, err := core.Open("default", root, o)
	if err != nil {
		t.Fatal(err)
	}
	ob, err := core.Open("other", other, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { def.Close(); ob.Close() })
	h := &harness{root: root, logs: &testenv.Buffer{}, served: make(chan struct{}, 64)}
	h.srv, err = New(Config{
		Sandboxes: map[string]*core.Sandbox{"default": def, "other": ob},
		Log:       slog.New(slog.NewTextHandler(h.logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.start(t)
	return &namedHarness{harness: h, other: other, def: def, ob: ob}
}

// start serves h.srv on a test server, and logs the server's log when the
// test fails.
func (h *harness) start(t *testing.T) {
	t.Helper()
	h.ts = httptest.NewServer(h.srv.Handler())
	t.Cleanup(h.ts.Close)
	t.Cleanup(func() {
		if t.Failed() && h.logs.Len() > 0 {
			t.Logf("server log:\n%s", h.logs.String())
		}
	})
}

// watching starts the kernel watch of sandbox default and waits until it
// is ready.
func (h *namedHarness) watching(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := h.def.StartWatching(ctx, nil); err != nil {
		t.Fatal(err)
	}
	<-h.def.Watch().Ready()
}

// wantNamedError checks a §5 error: status, code (when given) and path
// (when given), and that error is not empty.
func wantNamedError(t *testing.T, r resp, status int, code, path string) named.ErrorBody {
	t.Helper()
	if r.Status != status {
		t.Errorf("status: got %d, want %d (body %s)", r.Status, status, r.Body)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	var e named.ErrorBody
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatalf("body %q: %v", r.Body, err)
	}
	if e.Error == "" {
		t.Errorf("error: empty")
	}
	if !strings.HasPrefix(e.Code, "E") {
		t.Errorf("code: got %q, want an errno name", e.Code)
	}
	if code != "" && e.Code != code {
		t.Errorf("code: got %q, want %q (error %q)", e.Code, code, e.Error)
	}
	if path != "" && e.Path != path {
		t.Errorf("path: got %q, want %q", e.Path, path)
	}
	return e
}

func namedBody(v any) *bytes.Reader {
	b, _ := json.Marshal(v)
	return bytes.NewReader(b)
}

var namedPrefixes = []string{"/v1/sandboxes/", "/v1/sprites/"}

// wsMsg is any message the watch socket sends.
type wsMsg struct {
	Type      string   `json:"type"`
	Paths     []string `json:"paths"`
	Path      string   `json:"path"`
	Event     string   `json:"event"`
	Timestamp string   `json:"timestamp"`
	IsDir     bool     `json:"isDir"`
	Size      int64    `json:"size"`
	Message   string   `json:"message"`
	Seq       uint64   `json:"seq"`
}

func (h *namedHarness) dialWatch(t *testing.T, target string, client *http.Client) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(h.ts.URL, "http")+target, &websocket.DialOptions{HTTPClient: client})
	if err != nil {
		t.Fatalf("dial %s: %v (%v)", target, err, res)
	}
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func wsSend(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	b, _ := json.Marshal(v)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func wsRecv(t *testing.T, c *websocket.Conn, within time.Duration) wsMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	typ, b, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if typ != websocket.MessageText {
		t.Fatalf("message type %v, want text", typ)
	}
	var m wsMsg
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("message %q: %v", b, err)
	}
	return m
}

// newWatchHarness is the harness with the kernel watch of the root running,
// ready before the test starts.
