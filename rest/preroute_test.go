package rest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"sandfs/rest/httpkit"
)

// prerouteServer is the harness's handler behind a listener wrapped as
// cmd/sandfs wraps it, with a small header limit.
func prerouteServer(t *testing.T) (*harness, string) {
	t.Helper()
	h := newHarness(t, harnessOpts{})
	ts := httptest.NewUnstartedServer(h.srv.Handler())
	ts.Listener = h.srv.WrapListener(ts.Listener)
	ts.Config.MaxHeaderBytes = 4 << 10
	ts.Start()
	t.Cleanup(ts.Close)
	return h, ts.Listener.Addr().String()
}

// rawExchange writes raw requests on one connection and reads the answers.
func rawExchange(t *testing.T, addr string, raw ...string) []resp {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	var out []resp
	for _, r := range raw {
		if _, err := io.WriteString(c, r); err != nil {
			t.Fatalf("write: %v", err)
		}
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("reading the answer to %.60q: %v", r, err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.Close { // ReadResponse takes Connection: close out of the header
			res.Header.Set("Connection", "close")
		}
		out = append(out, resp{Status: res.StatusCode, Header: res.Header, Body: b})
	}
	return out
}

// TestPreRoutingErrors (item 14): the answers net/http gives before any
// handler (431 for headers over the limit, 400 for a missing or malformed
// Host) come in the family shape of the route the request line names, and
// as problem+json where none is known; answers of the handlers pass
// untouched, on the same connection.
func TestPreRoutingErrors(t *testing.T) {
	h, addr := prerouteServer(t)
	h.writeFile(t, "/a.txt", "alpha")
	big := "X-Big: " + strings.Repeat("b", 8<<10) + "\r\n"
	for _, c := range []struct {
		name, raw string
		family    string
		status    int
		k         httpkit.Kind
	}{
		{"431 on v2", "GET /v2/fs/read?path=/a.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n" + big + "\r\n", FamilyAIOv2, 431, httpkit.KindHeaderTooLarge},
		{"431 on v1 file", "POST /v1/file/read HTTP/1.1\r\nHost: 127.0.0.1\r\n" + big + "\r\n", FamilyAIOv1, 431, httpkit.KindHeaderTooLarge},
		{"431 on /v1/fs", "GET /v1/fs/stat?path=/a.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n" + big + "\r\n", FamilyAgent, 431, ""},
		{"431 on named", "GET /v1/sprites/default/fs/stat?path=/a.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n" + big + "\r\n", FamilyNamed, 431, ""},
		{"431 with a huge path", "GET /v1/sandboxes/default/fs/read?path=/" + strings.Repeat("p", 8<<10) + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", FamilyNamed, 431, ""},
		{"431 on no route", "GET /nowhere HTTP/1.1\r\nHost: 127.0.0.1\r\n" + big + "\r\n", FamilyService, 431, ""},
		{"malformed Host on v1 download (v2 family)", "GET /v1/file/download?path=/a.txt HTTP/1.1\r\nHost: a b\r\n\r\n", FamilyAIOv2, 400, httpkit.KindInvalidRequest},
		{"missing Host on named", "GET /v1/sandboxes/default/fs/read?path=/a.txt HTTP/1.1\r\n\r\n", FamilyNamed, 400, ""},
		{"two Hosts on /v1/fs", "GET /v1/fs/stat?path=/a.txt HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", FamilyAgent, 400, ""},
		{"bad header name on v1 capabilities (v1 family)", "GET /v1/capabilities HTTP/1.1\r\nHost: 127.0.0.1\r\nBad Name: x\r\n\r\n", FamilyAIOv1, 400, httpkit.KindInvalidRequest},
		{"garbage", "NOT HTTP AT ALL\r\n\r\n", FamilyService, 400, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := rawExchange(t, addr, c.raw)[0]
			if r.Status != c.status {
				t.Fatalf("status %d, want %d: %s", r.Status, c.status, r.Body)
			}
			if err := checkFamilyShape(c.family, r); err != nil {
				t.Fatalf("%s shape: %v: %q (Content-Type %q)", c.family, err, r.Body, r.Header.Get("Content-Type"))
			}
			if c.k != "" {
				wantGuardRefusal(t, c.family, r, c.status, c.k)
			}
			if r.Header.Get("Connection") != "close" {
				t.Errorf("Connection %q, want close", r.Header.Get("Connection"))
			}
		})
	}

	// On a keep-alive connection: two answers of handlers (a 200, then a
	// handler's own 404 with its Date), then a refused Host on /v1/fs.
	rs := rawExchange(t, addr,
		"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"GET /v1/fs/stat?path=/missing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
		"GET /v1/fs/stat?path=/a.txt HTTP/1.1\r\nHost: a b\r\n\r\n")
	// (uptime_seconds, KEP-539.2's, is 0 or more on a fresh server.)
	if want := regexp.MustCompile(`^\{"status":"ok","version":` + regexp.QuoteMeta(strconv.Quote(Version())) + `,"uptime_seconds":[0-9]+\}\n$`); rs[0].Status != 200 || !want.Match(rs[0].Body) {
		t.Errorf("health: %d %q", rs[0].Status, rs[0].Body)
	}
	if rs[1].Status != 404 || rs[1].Header.Get("Date") == "" {
		t.Errorf("a handler's 404: %d, Date %q", rs[1].Status, rs[1].Header.Get("Date"))
	}
	wantProblem(t, rs[1], 404, "not_found")
	if err := checkFamilyShape(FamilyAgent, rs[2]); rs[2].Status != 400 || err != nil {
		t.Errorf("the third request: %d %v %s", rs[2].Status, err, rs[2].Body)
	}
}

// TestPreRoutingFastPaths: the wrapped connection keeps sendfile (ReadFrom)
// for downloads, serves a large file whole, and carries a websocket.
func TestPreRoutingFastPaths(t *testing.T) {
	h, addr := prerouteServer(t)
	content := strings.Repeat("0123456789abcdef", 1<<16) // 1 MiB
	h.writeFile(t, "/big.bin", content)
	res, err := http.Get("http://" + addr + "/v2/fs/download?path=/big.bin")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || string(b) != content {
		t.Fatalf("download: %d, %d bytes", res.StatusCode, len(b))
	}
	var _ io.ReaderFrom = &prerouteConn{} // the wrapper offers ReadFrom to net/http
	var _ interface{ CloseWrite() error } = &prerouteConn{}
}
