package daemon

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The daemon's http.Server on a real loopback listener, with timeouts short
// enough for a test: a client that dribbles its headers and a keep-alive
// connection left idle both lose their connection, and headers over the
// limit get 431. The assertions are on what happens (the server closes the
// connection), never on how long it took: the deadlines on the client side
// are only there so a broken server fails the test instead of hanging it.
func startTestServer(t *testing.T, cfg HTTPConfig) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	srv := httpServer(h, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)), context.Background())
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	return l.Addr().String()
}

// readsEOF reports whether the server closed c (EOF or a reset) before
// the safety deadline, with nothing before it but a refusal (net/http may
// answer 400 to the headers it gave up on).
func readsEOF(t *testing.T, c net.Conn) bool {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	b, err := io.ReadAll(c)
	if len(b) > 0 && !strings.HasPrefix(string(b), "HTTP/1.1 4") {
		t.Errorf("got %q before the close, want nothing or a 4xx", b)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return false
	}
	return true // io.ReadAll's nil (EOF) or a connection reset
}

func TestServerCutsSlowHeaders(t *testing.T) {
	addr := startTestServer(t, HTTPConfig{HeaderTimeout: 200 * time.Millisecond, IdleTimeout: time.Minute})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// One header byte every 50 ms, never finishing: the headers would take
	// forever, the server must not wait for them.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		c.Write([]byte("GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: "))
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := c.Write([]byte("a")); err != nil {
				return // the server closed the connection
			}
		}
	}()
	if !readsEOF(t, c) {
		t.Fatal("a client sending its headers one byte at a time kept its connection")
	}
}

func TestServerClosesIdleKeepAlive(t *testing.T) {
	addr := startTestServer(t, HTTPConfig{HeaderTimeout: time.Minute, IdleTimeout: 200 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("GET /health HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 || string(body) != "ok" || res.Close {
		t.Fatalf("first request: %d %q close=%v, want 200 \"ok\" kept alive", res.StatusCode, body, res.Close)
	}
	// Now idle: the server must close the connection.
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	rest, err := io.ReadAll(br)
	if len(rest) > 0 {
		t.Errorf("got %q on the idle connection", rest)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatal("an idle keep-alive connection was kept open")
	}
}

func TestServerHeaderLimit(t *testing.T) {
	addr := startTestServer(t, HTTPConfig{HeaderTimeout: time.Minute, IdleTimeout: time.Minute, MaxHeaderBytes: 8 << 10})
	for _, tc := range []struct {
		name string
		size int
		want int
	}{{"under", 4 << 10, 200}, {"over", 64 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", "http://"+addr+"/health", nil)
			req.Header.Set("X-Big", strings.Repeat("b", tc.size))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.want {
				t.Errorf("status %d, want %d", res.StatusCode, tc.want)
			}
		})
	}
}

func TestLocalAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7420": true, "[::1]:7420": true, "localhost:7420": true, "unix:/tmp/s.sock": true,
		"0.0.0.0:7420": false, ":7420": false, "[::]:7420": false,
	} {
		if got := LocalAddr(addr); got != want {
			t.Errorf("LocalAddr(%q) = %v, want %v", addr, got, want)
		}
	}
}
