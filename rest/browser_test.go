package rest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/rest/httpkit"
)

// The browser guard (browser.go). Every route
// that changes something or reads a JSON body is sent, from a fixture it
// would change, with each media type a page may send without a CORS
// preflight and with each cross-origin marker a browser sets: each is
// refused in the family's shape and the disk (content, modes, owners,
// extended attributes) and the watcher list stay as they were. The same
// request from the daemon's own origin, or from an --allow-origin origin,
// then runs and changes what it should, so the refusals are what stopped it.

// guardCase is one request that passes every check of the guard.
type guardCase struct {
	method, target string
	body           func() io.Reader // nil: no body
	ctype          string           // "" = application/json when the body is JSON
	json           bool             // the route reads a JSON body
	changes        bool             // the request changes the disk or the watcher list
	accept         string           // the Accept header ("" none)
}

func (c guardCase) contentType() string {
	if c.ctype == "" && c.json {
		return "application/json"
	}
	return c.ctype
}

func guardCases(t *testing.T, ids map[string]string) []guardCase {
	t.Helper()
	js := func(method, target, body string, changes bool) guardCase {
		return guardCase{method: method, target: target, body: func() io.Reader { return strings.NewReader(body) }, json: true, changes: changes}
	}
	raw := func(method, target, ctype string, body []byte) guardCase {
		c := guardCase{method: method, target: target, ctype: ctype, changes: true}
		if body != nil {
			c.body = func() io.Reader { return bytes.NewReader(body) }
		}
		return c
	}
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	tw.WriteHeader(&tar.Header{Name: "t.txt", Mode: 0o644, Size: 2, Typeflag: tar.TypeReg})
	tw.Write([]byte("tt"))
	tw.Close()
	var mb bytes.Buffer
	mw := multipart.NewWriter(&mb)
	fw, _ := mw.CreateFormFile("file", "u.txt")
	fw.Write([]byte("uploaded"))
	mw.Close()

	cases := []guardCase{
		// sandbox-agent.
		raw("PUT", "/v1/fs/file?path=/p.txt", "application/octet-stream", []byte("put")),
		raw("DELETE", "/v1/fs/entry?path=/a.txt", "", nil),
		raw("POST", "/v1/fs/mkdir?path=/nd", "", nil),
		js("POST", "/v1/fs/move", `{"from":"/a.txt","to":"/m.txt"}`, true),
		raw("POST", "/v1/fs/upload-batch?path=/up", "application/x-tar", tb.Bytes()),
		// AIO watch: a watcher takes one of the 128 slots.
		js("POST", "/v2/watch", `{"path":"/d","debounce":70}`, true),
		js("POST", "/v1/file/watch", `{"path":"/d","debounce":80}`, true),
		js("POST", "/v1/file/watch/wait", `{"path":"/d","timeout":0}`, false), // 400 once it runs: no wait
		js("POST", "/v1/file/watch/"+ids["poll"]+"/poll", `{"cursor":0,"timeout":0}`, false),
		raw("DELETE", "/v2/watch/"+ids["v2"], "", nil),
		raw("DELETE", "/v1/file/watch/"+ids["v1"], "", nil),
		// AIO files.
		js("POST", "/v1/file/read", `{"file":"/a.txt"}`, false),
		js("POST", "/v2/fs/write", `{"path":"/w.txt","content":"x"}`, true),
		js("POST", "/v1/file/write", `{"file":"/w.txt","content":"x"}`, true),
		js("POST", "/v2/fs/edit", `{"command":"str_replace","path":"/a.txt","old_str":"alpha","new_str":"omega"}`, true),
		js("POST", "/v1/file/str_replace_editor", `{"command":"str_replace","path":"/a.txt","old_str":"alpha","new_str":"omega"}`, true),
		js("POST", "/v1/file/replace", `{"file":"/a.txt","old_str":"alpha","new_str":"omega"}`, true),
		js("POST", "/v1/file/stat", `{"path":"/a.txt"}`, false),
		js("POST", "/v1/file/list", `{"path":"/"}`, false),
		js("POST", "/v1/file/find", `{"path":"/","glob":"*.txt"}`, false),
		js("POST", "/v1/file/glob", `{"path":"/","pattern":"*.txt"}`, false),
		js("POST", "/v2/fs/mkdir", `{"path":"/nd"}`, true),
		js("POST", "/v1/file/mkdir", `{"path":"/nd"}`, true),
		js("POST", "/v2/fs/copy", `{"source":"/a.txt","destination":"/c.txt"}`, true),
		js("POST", "/v1/file/copy", `{"source":"/a.txt","destination":"/c.txt"}`, true),
		js("POST", "/v2/fs/move", `{"source":"/a.txt","destination":"/m.txt"}`, true),
		js("POST", "/v1/file/move", `{"source":"/a.txt","destination":"/m.txt"}`, true),
		js("POST", "/v2/fs/delete", `{"path":"/a.txt"}`, true),
		js("POST", "/v1/file/delete", `{"path":"/a.txt"}`, true),
		// AIO transfer.
		js("POST", "/v2/fs/grep", `{"path":"/","pattern":"alpha"}`, false),
		js("POST", "/v1/file/grep", `{"path":"/","pattern":"alpha"}`, false),
		js("POST", "/v1/file/search", `{"file":"/a.txt","regex":"alpha"}`, false),
		raw("POST", "/v2/fs/upload?path=/u.txt", mw.FormDataContentType(), mb.Bytes()),
		raw("POST", "/v1/file/upload?path=/u.txt", mw.FormDataContentType(), mb.Bytes()),
		raw("PUT", "/v2/fs/tree?path=/t", "application/x-tar", tb.Bytes()),
		js("PUT", "/v2/fs/xattr", `{"path":"/a.txt","name":"user.new","value":"eA=="}`, true),
		raw("DELETE", "/v2/fs/xattr?path=/a.txt&name=user.t", "", nil),
		// sandboxd (KEP-539.2): raw and multipart writes, a delete.
		raw("PUT", "/v1/files/k.txt", "application/octet-stream", []byte("kep")),
		raw("PUT", "/v1/files/k.txt?mode=0600", mw.FormDataContentType(), mb.Bytes()),
		raw("DELETE", "/v1/files/a.txt", "", nil),
	}
	for _, p := range []string{"/v1/sandboxes/default/fs", "/v1/sprites/default/fs"} {
		cases = append(cases,
			raw("PUT", p+"/write?path=/nw.txt", "application/octet-stream", []byte("named")),
			raw("DELETE", p+"/delete?path=/a.txt", "", nil),
			js("DELETE", p+"/delete", `{"path":"/a.txt"}`, true),
			js("POST", p+"/rename", `{"source":"/a.txt","dest":"/r.txt"}`, true),
			js("POST", p+"/copy", `{"source":"/a.txt","dest":"/c.txt"}`, true),
			js("POST", p+"/chmod", `{"path":"/a.txt","mode":"0600"}`, true),
			js("POST", p+"/chown", `{"path":"/a.txt","uid":65534}`, true),
		)
	}
	// The sandboxes: the guard harness has no Manager, so these answer 405
	// (or 404) once they run, and change nothing.
	for _, p := range []string{"/v1/sandboxes", "/v1/sprites"} {
		cases = append(cases,
			js("POST", p, `{"name":"guarded"}`, false),
			js("PATCH", p+"/default", `{"quota":{"bytes":1}}`, false),
			guardCase{method: "DELETE", target: p + "/nope"},
			js("POST", p+"/default/merge", `{"strategy":"theirs"}`, false),
			js("POST", p+"/default/move", `{"to":"elsewhere"}`, false),
		)
	}
	// History: the guard harness keeps no state, so these answer 409 once
	// they run, and change nothing.
	for _, p := range []string{"/v1/sandboxes/default", "/v1/sprites/default"} {
		cases = append(cases,
			js("POST", p+"/checkpoints", `{"name":"n"}`, false),
			guardCase{method: "DELETE", target: p + "/checkpoints/cp_000000000000"},
			js("POST", p+"/restore", `{"checkpoint":"cp_000000000000"}`, false),
		)
	}
	// MCP: a tools/call of write_file runs statelessly (no initialize);
	// GET and DELETE answer 405 once they run.
	for _, p := range []string{"/mcp", "/v1/sandboxes/default/mcp", "/v1/sprites/default/mcp"} {
		c := js("POST", p, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"/mcp.txt","content":"x"}}}`, true)
		c.accept = "application/json, text/event-stream"
		cases = append(cases, c, guardCase{method: "DELETE", target: p})
	}
	return cases
}

// guardFixture (re)creates the root: a.txt with an extended attribute,
// d/b.txt.
func guardFixture(t *testing.T, root string) {
	t.Helper()
	ents, _ := os.ReadDir(root)
	for _, e := range ents {
		os.RemoveAll(filepath.Join(root, e.Name()))
	}
	if err := os.MkdirAll(filepath.Join(root, "d"), 0o755); err != nil {
		t.Fatal(err)
	}
	for p, c := range map[string]string{"a.txt": "alpha\nbeta\n", "d/b.txt": "inner"} {
		if err := os.WriteFile(filepath.Join(root, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Setxattr(filepath.Join(root, "a.txt"), "user.t", []byte("v"), 0); err != nil {
		t.Fatalf("setxattr (the root's filesystem must take user xattrs): %v", err)
	}
}

// guardState is everything a request could change: each entry of the root
// with its mode, size, content hash, link, xattrs and owner, and the
// watchers.
func guardState(t *testing.T, h *harness) string {
	t.Helper()
	snap := snapshot(t, h.root)
	var lines []string
	for p, d := range snap {
		var st syscall.Stat_t
		if err := syscall.Lstat(filepath.Join(h.root, p), &st); err == nil {
			d += fmt.Sprintf(" %d:%d", st.Uid, st.Gid)
		}
		lines = append(lines, p+" "+d)
	}
	sort.Strings(lines)
	res, err := http.Get(h.ts.URL + "/v2/watch")
	if err != nil {
		t.Fatal(err)
	}
	var list struct {
		Data struct {
			Watchers []struct {
				ID string `json:"watcher_id"`
			} `json:"watchers"`
		} `json:"data"`
	}
	json.NewDecoder(res.Body).Decode(&list)
	res.Body.Close()
	var ws []string
	for _, w := range list.Data.Watchers {
		ws = append(ws, w.ID)
	}
	sort.Strings(ws)
	return strings.Join(lines, "\n") + "\nwatchers " + strings.Join(ws, ",")
}

func (h *harness) createWatcher(t *testing.T, path string, debounce int) string {
	t.Helper()
	r := h.do(t, req{Method: "POST", Target: "/v2/watch", Body: strings.NewReader(fmt.Sprintf(`{"path":%q,"debounce":%d}`, path, debounce))})
	wantStatus(t, r, 200)
	var v struct {
		Data struct {
			ID string `json:"watcher_id"`
		} `json:"data"`
	}
	json.Unmarshal(r.Body, &v)
	return v.Data.ID
}

// send sends c with extra headers (a "Content-Type" there replaces the
// case's; "" sends none) and the Host, when given.
func (h *harness) send(t *testing.T, c guardCase, extra map[string]string) resp {
	t.Helper()
	hdr := map[string]string{}
	if ct := c.contentType(); ct != "" {
		hdr["Content-Type"] = ct
	}
	if c.accept != "" {
		hdr["Accept"] = c.accept
	}
	for k, v := range extra {
		hdr[k] = v
	}
	var body io.Reader
	if c.body != nil {
		body = c.body()
	}
	hr, err := http.NewRequest(c.method, h.ts.URL+c.target, body)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if v == "" {
			continue
		}
		hr.Header.Set(k, v)
	}
	if h.token != "" {
		hr.Header.Set("Authorization", "Bearer "+h.token)
	}
	res, err := h.ts.Client().Do(hr)
	if err != nil {
		t.Fatalf("%s %s: %v", c.method, c.target, err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	out := resp{Status: res.StatusCode, Header: res.Header, Body: b}
	checkAgainstOpenAPI(t, h.srv.Routes(), c.method, hr.URL.Path, out)
	return out
}

// Media types a page may send without a CORS preflight, and none.
var nonJSONTypes = []string{"text/plain", "text/plain;charset=UTF-8", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""}

// Cross-origin markers a browser sets (Origin, Sec-Fetch-Site).
func crossOrigins(own string) map[string]map[string]string {
	return map[string]map[string]string{
		"foreign Origin":                      {"Origin": "http://evil.example"},
		"foreign Origin, cross-site":          {"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
		"cross-site without Origin (no-cors)": {"Sec-Fetch-Site": "cross-site"},
		"same-site (localhost:3001)":          {"Origin": "http://localhost:3001", "Sec-Fetch-Site": "same-site"},
		"null Origin":                         {"Origin": "null"},
		"own host, another port":              {"Origin": own[:strings.LastIndex(own, ":")] + ":1"},
		"foreign Origin, same-site":           {"Origin": "http://evil.example", "Sec-Fetch-Site": "same-site"},
	}
}

func TestBrowserGuardRoutes(t *testing.T) {
	for _, allowed := range []bool{false, true} {
		t.Run(map[bool]string{false: "own origin", true: "allowed origin"}[allowed], func(t *testing.T) {
			var opts harnessOpts
			pass := map[string]string{"Sec-Fetch-Site": "same-origin"}
			if allowed {
				opts.AllowOrigins = []string{"http://localhost:3000"}
				pass = map[string]string{"Origin": "http://localhost:3000", "Sec-Fetch-Site": "same-site"}
			}
			h := newHarness(t, opts)
			guardFixture(t, h.root)
			if !allowed {
				pass["Origin"] = h.ts.URL
			}
			ids := map[string]string{"poll": h.createWatcher(t, "/", 61), "v2": h.createWatcher(t, "/", 62), "v1": h.createWatcher(t, "/", 63)}
			cases := guardCases(t, ids)

			covered := map[string]bool{}
			refusals, passed := 0, 0
			for _, c := range cases {
				u, _ := http.NewRequest(c.method, c.target, nil)
				rt, ok := matchRoute(h.srv.Routes(), c.method, u.URL.Path)
				if !ok {
					t.Fatalf("%s %s matches no route", c.method, c.target)
				}
				covered[rt.Method+" "+rt.Path] = true
				name := rt.Method + " " + c.target
				t.Run(name, func(t *testing.T) {
					try := func(label string, extra map[string]string, status int, k httpkit.Kind) {
						t.Helper()
						refusals++
						guardFixture(t, h.root)
						before := guardState(t, h)
						r := h.send(t, c, extra)
						t.Run(label, func(t *testing.T) { wantGuardRefusal(t, rt.Family, r, status, k) })
						if after := guardState(t, h); after != before {
							t.Errorf("%s: refused, yet changed:\nbefore %s\nafter  %s", label, before, after)
						}
					}
					if c.json && !allowed {
						for _, ct := range nonJSONTypes {
							try("Content-Type "+ct, map[string]string{"Content-Type": ct}, 415, httpkit.KindUnsupportedMedia)
						}
					}
					for label, hdr := range crossOrigins(h.ts.URL) {
						try(label, hdr, 403, httpkit.KindCrossOrigin)
					}
					passes := []map[string]string{pass}
					if c.json && !c.changes {
						passes = append(passes, map[string]string{"Content-Type": "application/json; charset=utf-8"}, map[string]string{"Content-Type": "Application/JSON"})
					}
					for _, extra := range passes {
						passed++
						guardFixture(t, h.root)
						before := guardState(t, h)
						hdr := map[string]string{}
						for k, v := range pass {
							hdr[k] = v
						}
						for k, v := range extra {
							hdr[k] = v
						}
						r := h.send(t, c, hdr)
						if c.changes && !ran(rt.Family, r) {
							t.Fatalf("with %v: status %d %s, want it to run", hdr, r.Status, r.Body)
						}
						if r.Status == 403 || r.Status == 415 || r.Status == 421 {
							t.Fatalf("with %v: refused %d %s", hdr, r.Status, r.Body)
						}
						if after := guardState(t, h); c.changes && after == before {
							t.Errorf("with %v: ran (%d) but changed nothing", hdr, r.Status)
						}
					}
				})
			}
			t.Logf("%d requests over %d routes: %d refused, each with the disk and watchers unchanged; %d passed", refusals+passed, len(covered), refusals, passed)
			// Every route that can change something, or reads a JSON body,
			// is a case above.
			for _, rt := range h.srv.Routes() {
				if rt.Method != "GET" && rt.Method != "HEAD" && !covered[rt.Method+" "+rt.Path] {
					t.Errorf("route %s %s has no guard case", rt.Method, rt.Path)
				}
			}
		})
	}
}

// TestBrowserGuardEveryRoute: every route of the table, GETs and the
// public ones included, refuses a cross-site request and a foreign Host in
// its family's shape.
func TestBrowserGuardEveryRoute(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	guardFixture(t, h.root)
	id := h.createWatcher(t, "/", 64)
	before := guardState(t, h)
	for _, rt := range h.srv.Routes() {
		target := strings.NewReplacer(":name", "default", ":id", id, "*path", "a.txt").Replace(rt.Path)
		if strings.Contains(rt.Path, "/fs/") || strings.HasPrefix(rt.Path, "/v2/fs/") || strings.HasPrefix(rt.Path, "/v1/file/") {
			target += "?path=/a.txt"
		}
		for label, c := range map[string]struct {
			r      req
			status int
			k      httpkit.Kind
		}{
			"cross-site":                       {req{Header: map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}}, 403, httpkit.KindCrossOrigin},
			"evil Host":                        {req{Host: "evil.example"}, 421, httpkit.KindMisdirected},
			"evil Host with the daemon's port": {req{Host: "evil.example:" + h.ts.URL[strings.LastIndex(h.ts.URL, ":")+1:]}, 421, httpkit.KindMisdirected},
		} {
			t.Run(rt.Method+" "+rt.Path+" "+label, func(t *testing.T) {
				c.r.Method, c.r.Target = rt.Method, target
				r := h.do(t, c.r)
				if rt.Method == "HEAD" {
					wantStatus(t, r, c.status)
					return
				}
				wantGuardRefusal(t, rt.Family, r, c.status, c.k)
			})
		}
	}
	// Paths no route takes answer the guard's refusal too, not 404/405.
	wantGuardRefusal(t, FamilyAIOv2, h.do(t, req{Method: "GET", Target: "/v2/nowhere", Host: "evil.example"}), 421, httpkit.KindMisdirected)
	wantGuardRefusal(t, FamilyNamed, h.do(t, req{Method: "PATCH", Target: "/v1/sandboxes/default/fs/read", Header: map[string]string{"Sec-Fetch-Site": "cross-site"}}), 403, httpkit.KindCrossOrigin)
	if after := guardState(t, h); after != before {
		t.Errorf("changed:\nbefore %s\nafter  %s", before, after)
	}
}
