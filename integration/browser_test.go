package integration

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeBrowserGuard: the daemon built as shipped takes --allow-origin
// and --allow-host, refuses a page of another origin (403), a foreign Host
// (421) and a JSON body sent as text/plain (415), each in its family's
// shape and without a change, and answers net/http's own 431 in the
// family's shape through its wrapped listener.
func TestServeBrowserGuard(t *testing.T) {
	d := startDaemon(t, "--allow-origin", "http://localhost:3000", "--allow-host", "sandfs.test", "--max-header-bytes", "4K")
	port := d.URL[strings.LastIndex(d.URL, ":")+1:]
	send := func(method, route, ctype, body, host string, hdr map[string]string) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(method, d.URL+route, strings.NewReader(body))
		if body == "" {
			req.Body = nil
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		if d.Token != "" {
			req.Header.Set("Authorization", "Bearer "+d.Token)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		if host != "" {
			req.Host = host
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, res.Header.Get("Content-Type"), string(b)
	}
	write := `{"path":"/w.txt","content":"hello"}`
	for _, c := range []struct {
		name, ctype, host string
		hdr               map[string]string
		status            int
		errType           string
	}{
		{"text/plain body", "text/plain", "", nil, 415, "unsupported_media_type"},
		{"form body", "application/x-www-form-urlencoded", "", nil, 415, "unsupported_media_type"},
		{"foreign Origin", "application/json", "", map[string]string{"Origin": "http://evil.example"}, 403, "cross_origin_refused"},
		{"cross-site", "application/json", "", map[string]string{"Sec-Fetch-Site": "cross-site"}, 403, "cross_origin_refused"},
		{"foreign Host", "application/json", "evil.example:" + port, nil, 421, "misdirected_request"},
	} {
		status, ct, body := send("POST", "/v2/fs/write", c.ctype, write, c.host, c.hdr)
		var env struct {
			Success bool
			Data    struct {
				ErrorType string `json:"error_type"`
			}
		}
		json.Unmarshal([]byte(body), &env)
		if status != c.status || ct != "application/json" || env.Success || env.Data.ErrorType != c.errType {
			t.Errorf("%s: %d %s %s, want %d %s", c.name, status, ct, body, c.status, c.errType)
		}
		if _, err := os.Lstat(filepath.Join(d.Root, "w.txt")); err == nil {
			t.Fatalf("%s: refused, yet /w.txt was written", c.name)
		}
	}
	for _, c := range []struct {
		name, host string
		hdr        map[string]string
	}{
		{"allowed Origin", "", map[string]string{"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"}},
		{"own Origin", "", map[string]string{"Origin": d.URL, "Sec-Fetch-Site": "same-origin"}},
		{"allowed Host", "sandfs.test:" + port, nil},
		{"localhost", "localhost:" + port, nil},
	} {
		os.Remove(filepath.Join(d.Root, "w.txt"))
		if status, _, body := send("POST", "/v2/fs/write", "application/json; charset=utf-8", write, c.host, c.hdr); status != 200 {
			t.Errorf("%s: %d %s, want 200", c.name, status, body)
		}
		if got := readFile(t, filepath.Join(d.Root, "w.txt")); got != "hello" {
			t.Errorf("%s: /w.txt holds %q", c.name, got)
		}
	}

	// 431 from net/http itself, in the named family's shape.
	conn, err := net.Dial("tcp", strings.TrimPrefix(d.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	io.WriteString(conn, "GET /v1/sandboxes/default/fs/stat?path=/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: "+strings.Repeat("b", 16<<10)+"\r\n\r\n")
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	var ne struct{ Error, Code string }
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &ne); res.StatusCode != 431 || err != nil || ne.Code != "E2BIG" || ne.Error == "" {
		t.Errorf("oversized headers: %d %q %s, want 431 {error, code E2BIG}", res.StatusCode, res.Header.Get("Content-Type"), b)
	}
}

// TestServeBadAllowFlags: a wildcard, a malformed origin or a host with a
// port is refused at start, with a usage error, before anything opens.
func TestServeBadAllowFlags(t *testing.T) {
	for _, args := range [][]string{{"--allow-origin", "*"}, {"--allow-origin", "localhost:3000"}, {"--allow-host", "*"}, {"--allow-host", "h:80"}} {
		res := runSandfs(t, nil, nil, append([]string{"serve", "--root", t.TempDir(), "--listen", freeAddr(t)}, args...)...)
		if res.Code != 1 || !strings.Contains(res.Stderr, "allowed") || !strings.Contains(res.Stderr, "usage:") || strings.Contains(res.Stderr, "kernel watch") {
			t.Errorf("serve %v: %s, want a usage error naming the flag's value, before any sandbox opens", args, res)
		}
	}
}
