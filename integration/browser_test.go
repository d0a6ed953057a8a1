package integration

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
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

// TestBrowserAttackPage drives a hostile page in a real headless chromium
// (attack_check.mjs) against a daemon whose token the page even knows:
// forms (text/plain JSON, urlencoded, multipart with the token in the
// action URL), no-cors fetches, a preflighted fetch with the token header, a
// websocket, served from another port of 127.0.0.1 (same-site) and from
// localhost (cross-site), and a DNS-rebound name. Nothing may change: no
// file, no mode, no watcher; the websocket must not open; the rebound name
// gets 421, not the file.
func TestBrowserAttackPage(t *testing.T) {
	node, dir := requireNode(t, uiDir, "playwright-core", "SANDFS_REQUIRE_UI", "the hostile page browser test", "/usr/bin/chromium")
	const token = "attack-page-knows-this-token"
	d := startDaemon(t, "--token", token)
	if err := os.WriteFile(filepath.Join(d.Root, "keep.txt"), []byte("keep\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := dirState(t, d.Root)

	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<!doctype html><title>attacker</title><body></body>")
	}))
	defer attacker.Close()
	same := attacker.URL                                                // 127.0.0.1:P: same-site with the daemon
	cross := strings.Replace(attacker.URL, "127.0.0.1", "localhost", 1) // cross-site

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "attack_check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SANDFS_URL="+d.URL, "SANDFS_TOKEN="+token,
		"ATTACK_PAGES="+same+"/,"+cross+"/", "ATTACK_USERDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node attack_check.mjs: %v\n%s\n--- daemon log ---\n%s", err, out, d.Log())
	}
	t.Logf("node attack_check.mjs:\n%s", out)
	_, line, ok := strings.Cut(string(out), "RESULT ")
	if !ok {
		t.Fatalf("attack_check.mjs printed no RESULT line")
	}
	var res struct {
		Pages      map[string]map[string]string `json:"pages"`
		RebindRead struct {
			Status int    `json:"status"`
			Body   string `json:"body"`
		} `json:"rebindRead"`
		RebindConsole struct {
			Status int `json:"status"`
		} `json:"rebindConsole"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &res); err != nil {
		t.Fatalf("RESULT: %v", err)
	}
	if len(res.Pages) != 2 {
		t.Fatalf("pages run: %v", res.Pages)
	}
	for url, p := range res.Pages {
		if p["websocket"] != "refused" {
			t.Errorf("%s: websocket %q, want refused", url, p["websocket"])
		}
		if strings.Contains(p["corsRead"], "keep") {
			t.Errorf("%s: the page read a file: %q", url, p["corsRead"])
		}
		if !strings.HasPrefix(p["corsWrite"], "blocked") {
			t.Errorf("%s: the preflighted write was not blocked: %q", url, p["corsWrite"])
		}
	}
	if res.RebindRead.Status != 421 || strings.Contains(res.RebindRead.Body, "keep") || res.RebindConsole.Status != 421 {
		t.Errorf("rebound name: read %d %q, console %d; want 421 and no content", res.RebindRead.Status, res.RebindRead.Body, res.RebindConsole.Status)
	}
	if after := dirState(t, d.Root); after != before {
		t.Errorf("the hostile page changed the root:\nbefore %s\nafter  %s", before, after)
	}
	req, _ := http.NewRequest("GET", d.URL+"/v2/watch", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	wr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var wl struct {
		Data struct {
			Count int `json:"count"`
		} `json:"data"`
	}
	json.NewDecoder(wr.Body).Decode(&wl)
	wr.Body.Close()
	if wl.Data.Count != 0 {
		t.Errorf("the hostile page holds %d watchers", wl.Data.Count)
	}
	// The daemon saw the attempts and refused them itself (not only the
	// browser): its refusals are 403/415/421, never a write.
	if strings.Contains(d.Log(), "panic") {
		t.Errorf("daemon log has a panic:\n%s", d.Log())
	}
}

// dirState lists every entry under root with its mode and content.
func dirState(t *testing.T, root string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(&b, "%s %v %d", rel, fi.Mode(), fi.Size())
		if fi.Mode().IsRegular() {
			c, _ := os.ReadFile(p)
			fmt.Fprintf(&b, " %q", c)
		}
		b.WriteString("\n")
		return nil
	})
	return b.String()
}
