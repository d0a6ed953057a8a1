package rest

import (
	"bytes"
	"context"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"sandfs/rest/httpkit"
)

// The browser guard's hosts, unix socket, configuration, watch socket
// origin and CORS (browser_test.go holds the per-route guard cases).

// TestBrowserGuardHosts: the Host names that pass and those that do not.
func TestBrowserGuardHosts(t *testing.T) {
	h := newHarness(t, harnessOpts{AllowHosts: []string{"sandfs.internal", "10.9.8.7"}})
	guardFixture(t, h.root)
	port := h.ts.URL[strings.LastIndex(h.ts.URL, ":")+1:]
	for host, ok := range map[string]bool{
		"127.0.0.1:" + port: true, "127.0.0.1": true, "127.1.2.3:80": true, "localhost": true, "localhost:" + port: true,
		"LocalHost:" + port: true, "localhost.": true, "app.localhost:" + port: true, "[::1]:" + port: true, "[::1]": true,
		"[::ffff:127.0.0.1]:" + port: true, "sandfs.internal:" + port: true, "SANDFS.internal": true, "10.9.8.7:1": true,
		"0.0.0.0:" + port: true, "[::]:" + port: true,
		"evil.example": false, "evil.example:" + port: false, "localhost.evil.example": false, "sandfs.internal.evil.example": false,
		"192.168.1.1:" + port: false, "127.0.0.1.nip.io": false, "[::2]:" + port: false, "evillocalhost": false,
	} {
		t.Run(host, func(t *testing.T) {
			r := h.do(t, req{Method: "GET", Target: "/v1/fs/stat?path=/a.txt", Host: host})
			if ok {
				wantStatus(t, r, 200)
				return
			}
			wantGuardRefusal(t, FamilyAgent, r, 421, httpkit.KindMisdirected)
		})
	}
}

// TestBrowserGuardUnixSocket: on a unix socket any Host is taken (curl and
// Go's client send whatever the URL says; no browser reaches a socket
// file), and the Origin check still holds.
func TestBrowserGuardUnixSocket(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	guardFixture(t, h.root)
	sock := filepath.Join(t.TempDir(), "s.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h.srv.Handler()}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	client := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	get := func(host string, hdr map[string]string) resp {
		hr, _ := http.NewRequest("GET", "http://"+host+"/v1/fs/stat?path=/a.txt", nil)
		for k, v := range hdr {
			hr.Header.Set(k, v)
		}
		res, err := client.Do(hr)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return resp{Status: res.StatusCode, Header: res.Header, Body: b}
	}
	for _, host := range []string{"unix", "evil.example", "sandfs.sock"} {
		if r := get(host, nil); r.Status != 200 {
			t.Errorf("Host %s over the socket: %d %s", host, r.Status, r.Body)
		}
	}
	wantGuardRefusal(t, FamilyAgent, get("localhost", map[string]string{"Sec-Fetch-Site": "cross-site"}), 403, httpkit.KindCrossOrigin)
}

// TestUploadNeedsTokenHeader: a form can put a token in its action URL but
// never in a header, so the multipart upload (and every request that is
// not a GET or HEAD) takes the token from a header only.
func TestUploadNeedsTokenHeader(t *testing.T) {
	const token = "tok-upload"
	h := newHarness(t, harnessOpts{Token: token})
	guardFixture(t, h.root)
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	mw.WriteField("path", "/u.txt")
	fw, _ := mw.CreateFormFile("file", "u.txt")
	fw.Write([]byte("uploaded"))
	mw.Close()
	for _, route := range []string{"/v2/fs/upload", "/v1/file/upload"} {
		fam := map[string]string{"/v2/fs/upload": FamilyAIOv2, "/v1/file/upload": FamilyAIOv1}[route]
		for _, q := range []string{"?access_token=" + token, "?api_key=" + token} {
			r := h.do(t, req{Method: "POST", Target: route + q, Body: bytes.NewReader(mb.Bytes()), NoAuth: true,
				Header: map[string]string{"Content-Type": mw.FormDataContentType()}})
			wantGuardRefusal(t, fam, r, 401, httpkit.KindUnauthorized)
			h.wantAbsent(t, "/u.txt")
		}
		for _, hdr := range []map[string]string{{"Authorization": "Bearer " + token}, {"X-API-Key": token}} {
			hdr["Content-Type"] = mw.FormDataContentType()
			r := h.do(t, req{Method: "POST", Target: route, Body: bytes.NewReader(mb.Bytes()), NoAuth: true, Header: hdr})
			wantStatus(t, r, 200)
			h.wantFile(t, "/u.txt", "uploaded")
			os.Remove(h.host("/u.txt"))
		}
	}
	// A GET still takes the query token (EventSource, websockets, links).
	wantStatus(t, h.do(t, req{Method: "GET", Target: "/v2/fs/read?path=/a.txt&access_token=" + token, NoAuth: true}), 200)
}

func TestBrowserGuardConfig(t *testing.T) {
	for _, bad := range [][2][]string{
		{{"*"}, nil}, {{"null"}, nil}, {{"localhost:3000"}, nil}, {{"http://x/path"}, nil}, {{"ftp://x"}, nil}, {{"http://*.x"}, nil},
		{nil, {"*"}}, {nil, {"x:80"}}, {nil, {"*.example"}}, {nil, {""}}, {nil, {"a/b"}},
	} {
		if _, err := newBrowserGuard(bad[0], bad[1]); err == nil {
			t.Errorf("origins %q hosts %q: taken, want an error", bad[0], bad[1])
		}
	}
	g, err := newBrowserGuard([]string{"HTTP://LocalHost:3000/"}, []string{"[::5]", "Name.Example."})
	if err != nil {
		t.Fatal(err)
	}
	if !g.origins["http://localhost:3000"] || !g.hosts["::5"] || !g.hosts["name.example"] {
		t.Errorf("normalised: %v %v", g.origins, g.hosts)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Host = "x"
	r.Header.Set("Origin", "http://localhost:3000")
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	if !g.originOK(r) {
		t.Errorf("an allowed Origin with Sec-Fetch-Site cross-site: refused")
	}
}

// TestWatchSocketOrigin (item 7): the named watch refuses a handshake from
// a page of another origin before any upgrade, in the family's shape; the
// daemon's own origin and an --allow-origin origin get a socket.
func TestWatchSocketOrigin(t *testing.T) {
	h := newHarness(t, harnessOpts{AllowOrigins: []string{"http://localhost:3000"}})
	guardFixture(t, h.root)
	ws := "ws" + strings.TrimPrefix(h.ts.URL, "http")
	dial := func(hdr http.Header) (*websocket.Conn, *http.Response, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return websocket.Dial(ctx, ws+"/v1/sandboxes/default/fs/watch", &websocket.DialOptions{HTTPHeader: hdr})
	}
	for label, hdr := range map[string]http.Header{
		"foreign Origin":             {"Origin": {"http://evil.example"}},
		"foreign Origin, cross-site": {"Origin": {"http://evil.example"}, "Sec-Fetch-Site": {"cross-site"}},
		"same-site, not allowed":     {"Origin": {"http://localhost:3001"}, "Sec-Fetch-Site": {"same-site"}},
		"null Origin":                {"Origin": {"null"}},
	} {
		c, res, err := dial(hdr)
		if err == nil {
			c.CloseNow()
			t.Errorf("%s: upgraded, want a refusal", label)
			continue
		}
		if res == nil || res.StatusCode != 403 || res.Header.Get("Upgrade") != "" {
			t.Errorf("%s: %v (%v), want 403 without an upgrade", label, err, res)
			continue
		}
		b, _ := io.ReadAll(res.Body)
		wantGuardRefusal(t, FamilyNamed, resp{Status: res.StatusCode, Header: res.Header, Body: b}, 403, httpkit.KindCrossOrigin)
	}
	for label, hdr := range map[string]http.Header{
		"own Origin":     {"Origin": {h.ts.URL}, "Sec-Fetch-Site": {"same-origin"}},
		"allowed Origin": {"Origin": {"http://localhost:3000"}, "Sec-Fetch-Site": {"same-site"}},
		"no Origin":      nil,
	} {
		c, _, err := dial(hdr)
		if err != nil {
			t.Errorf("%s: %v", label, err)
			continue
		}
		wsSend(t, c, map[string]any{"type": "subscribe", "paths": []string{"/d"}})
		if m := wsRecv(t, c, 5*time.Second); m.Type != "subscribed" {
			t.Errorf("%s: got %+v, want subscribed", label, m)
		}
		c.CloseNow()
	}
}

// TestAllowedOriginCORS: an --allow-origin page gets the CORS answers its
// browser needs to send the token header and JSON and to read the answer;
// the daemon's own pages and every other origin get no Access-Control-*
// header, and a preflight from another origin is refused like any request.
func TestAllowedOriginCORS(t *testing.T) {
	h := newHarness(t, harnessOpts{AllowOrigins: []string{"http://localhost:3000"}})
	guardFixture(t, h.root)
	pre := h.do(t, req{Method: "OPTIONS", Target: "/v2/fs/write", Header: map[string]string{
		"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site",
		"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization, content-type"}})
	if pre.Status != 204 || pre.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Methods"), "POST") ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Authorization") ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "Content-Type") ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "X-Sandfs-Actor") ||
		!strings.Contains(pre.Header.Get("Access-Control-Allow-Headers"), "X-Sandfs-Sandbox") {
		t.Errorf("preflight of an allowed origin: %d %v", pre.Status, pre.Header)
	}
	r := h.do(t, req{Method: "POST", Target: "/v2/fs/write", Body: strings.NewReader(`{"path":"/w.txt","content":"x"}`),
		Header: map[string]string{"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"}})
	wantStatus(t, r, 200)
	if r.Header.Get("Access-Control-Allow-Origin") != "http://localhost:3000" || r.Header.Get("Vary") != "Origin" {
		t.Errorf("answer to an allowed origin: %v", r.Header)
	}
	h.wantFile(t, "/w.txt", "x")

	wantGuardRefusal(t, FamilyAIOv2, h.do(t, req{Method: "OPTIONS", Target: "/v2/fs/write", Header: map[string]string{
		"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site", "Access-Control-Request-Method": "POST"}}), 403, httpkit.KindCrossOrigin)
	own := h.do(t, req{Method: "GET", Target: "/v2/fs/read?path=/a.txt", Header: map[string]string{"Origin": h.ts.URL, "Sec-Fetch-Site": "same-origin"}})
	wantStatus(t, own, 200)
	for _, a := range []resp{own, h.do(t, req{Method: "GET", Target: "/v2/fs/read?path=/a.txt"})} {
		for k := range a.Header {
			if strings.HasPrefix(k, "Access-Control-") {
				t.Errorf("an answer to the daemon's own page or a program carries %s", k)
			}
		}
	}
}
