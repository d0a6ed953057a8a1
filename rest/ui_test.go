package rest

import (
	"encoding/json"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/journal"
	"sandfs/rest/httpkit"
	"sandfs/rest/named"
)

// TestUIServesEmbeddedFiles: /ui/ and each file answer the embedded bytes
// with their content type and the CSP, with no token even when one is set.
func TestUIServesEmbeddedFiles(t *testing.T) {
	h := newHarness(t, harnessOpts{Token: "tok"})
	cases := []struct {
		target, file, ctype, marker string
	}{
		{"/ui/", "index.html", "text/html; charset=utf-8", `<script type="module" src="main.js"></script>`},
		{"/ui/main.js", "main.js", "text/javascript; charset=utf-8", "async function main()"},
		{"/ui/api.js", "api.js", "text/javascript; charset=utf-8", "export async function api(method, url, opts = {})"},
		{"/ui/style.css", "style.css", "text/css; charset=utf-8", ".feed"},
		{"/ui/history.js", "history.js", "text/javascript; charset=utf-8", "export function wireHistory()"},
		{"/ui/highlight.js", "highlight.js", "text/javascript; charset=utf-8", "export function highlight(path, text)"},
		{"/ui/linediff.js", "linediff.js", "text/javascript; charset=utf-8", "export function lineDiff(a, b)"},
		{"/ui/usage.js", "usage.js", "text/javascript; charset=utf-8", "export function wireUsage()"},
	}
	for _, c := range cases {
		t.Run(c.target, func(t *testing.T) {
			r := h.do(t, req{Method: "GET", Target: c.target, NoAuth: true})
			wantStatus(t, r, 200)
			want, err := uiFiles.ReadFile("ui/" + c.file)
			if err != nil {
				t.Fatal(err)
			}
			if string(r.Body) != string(want) {
				t.Errorf("body: %d bytes, want the embedded %s (%d bytes)", len(r.Body), c.file, len(want))
			}
			if !strings.Contains(string(r.Body), c.marker) {
				t.Errorf("body lacks %q", c.marker)
			}
			if got := r.Header.Get("Content-Type"); got != c.ctype {
				t.Errorf("Content-Type: got %q, want %q", got, c.ctype)
			}
			if got := r.Header.Get("Content-Security-Policy"); !strings.Contains(got, "default-src 'none'") || !strings.Contains(got, "connect-src 'self'") {
				t.Errorf("Content-Security-Policy: got %q", got)
			}
			if got := r.Header.Get("X-Content-Type-Options"); got != "nosniff" {
				t.Errorf("X-Content-Type-Options: got %q", got)
			}
		})
	}
}

// TestUIRoutes: /ui redirects to /ui/; anything else under /ui/ is 404; the
// console's pages need no token while the API they call does.
func TestUIRoutes(t *testing.T) {
	h := newHarness(t, harnessOpts{Token: "tok"})
	cases := []struct {
		method, target string
		status         int
		location       string
	}{
		{"GET", "/ui", http.StatusMovedPermanently, "/ui/"},
		{"GET", "/ui/", 200, ""},
		{"GET", "/ui/x", 404, ""},
		{"GET", "/ui/nope.js", 404, ""},    // a known type, but not embedded
		{"GET", "/ui/x/", 404, ""},         // no redirect to a file that is not there
		{"GET", "/ui/ui/main.js", 404, ""}, // the embedded tree's own name is not a path
		{"GET", "/ui/main.go", 404, ""},    // a type the console never serves
		{"HEAD", "/ui/", 405, ""},
		{"GET", "/ui/index.html", 404, ""}, // the page has one address, /ui/
		{"GET", "/ui/ui.go", 404, ""},
		{"GET", "/ui/../openapi.json", http.StatusMovedPermanently, "/openapi.json"}, // cleaned, never a file lookup
		{"GET", "/ui/main.js/", http.StatusMovedPermanently, "/ui/main.js"},
		{"GET", "/ui/./style.css", http.StatusMovedPermanently, "/ui/style.css"},
		{"GET", "/ui/.", http.StatusMovedPermanently, "/ui/"},
		{"POST", "/ui/", http.StatusMethodNotAllowed, ""},
		{"GET", "/v1/sandboxes", 401, ""},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.target, func(t *testing.T) {
			rec := httptest.NewRecorder()
			h.srv.Handler().ServeHTTP(rec, localRequest(c.method, c.target, nil))
			if rec.Code != c.status {
				t.Fatalf("status: got %d, want %d (body %s)", rec.Code, c.status, rec.Body)
			}
			if got := rec.Header().Get("Location"); got != c.location {
				t.Errorf("Location: got %q, want %q", got, c.location)
			}
			if c.status == 404 && strings.Contains(rec.Body.String(), "<html") {
				t.Errorf("a 404 served the page: %s", rec.Body)
			}
		})
	}
}

// TestUIOneRoute: one public GET route serves the console, and it serves
// every embedded file with its content type, the page at /ui/ only (h.do
// holds each answer to openapi.json).
func TestUIOneRoute(t *testing.T) {
	h := newHarness(t, harnessOpts{Token: "tok"})
	var ui []Route
	for _, rt := range h.srv.Routes() {
		if strings.HasPrefix(rt.Path, "/ui") {
			ui = append(ui, rt)
		}
	}
	if len(ui) != 1 || ui[0] != (httpkit.NewRoute("GET", "/ui/*file", FamilyService, public)) {
		t.Errorf("console routes: %+v, want one public GET /ui/*file of the service family", ui)
	}
	files := uiFileNames()
	if len(files) < 3 {
		t.Fatalf("embedded files: %q, want at least index.html, a script and the style sheet", files)
	}
	for _, f := range files {
		target := "/ui/" + f
		if f == "index.html" {
			target = "/ui/"
		}
		ctype, ok := uiTypes[path.Ext(f)]
		if !ok {
			t.Errorf("embedded %s has no content type: it cannot be served", f)
			continue
		}
		r := h.do(t, req{Method: "GET", Target: target, NoAuth: true})
		wantStatus(t, r, 200)
		if got := r.Header.Get("Content-Type"); got != ctype {
			t.Errorf("%s: Content-Type %q, want %q", target, got, ctype)
		}
		want, _ := uiFiles.ReadFile("ui/" + f)
		if string(r.Body) != string(want) {
			t.Errorf("%s: %d bytes, want the embedded %d", target, len(r.Body), len(want))
		}
	}
	r := h.do(t, req{Method: "GET", Target: "/ui/nope.js", NoAuth: true})
	wantStatus(t, r, 404)
}

// TestUIModules: the page loads one module script, main.js; each module
// imports what it uses from another embedded module by a relative name,
// and every module is reached from main.js. No module builds markup from a
// string or sets a global, and only api.js talks to the daemon.
func TestUIModules(t *testing.T) {
	page, err := uiFiles.ReadFile("ui/index.html")
	if err != nil {
		t.Fatal(err)
	}
	if s := regexp.MustCompile(`<script\b[^>]*>`).FindAllString(string(page), -1); len(s) != 1 || s[0] != `<script type="module" src="main.js">` {
		t.Errorf("index.html's scripts: %q, want the one module main.js", s)
	}
	importLine := regexp.MustCompile(`(?m)^import (?:\{[^}\n]*\} from )?'([^']*)';$`)
	anyImport := regexp.MustCompile(`(?m)^\s*import\b|\bimport\(`)
	relative := regexp.MustCompile(`^\./([a-z]+\.js)$`)
	markup := regexp.MustCompile(`\.(innerHTML|outerHTML)\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(`)
	network := regexp.MustCompile(`\bfetch\(|new (WebSocket|EventSource|XMLHttpRequest)\(|sendBeacon\(`)
	global := regexp.MustCompile(`\b(window|globalThis|self)\.[\w$]+\s*=[^=]|^\s*var\s`)
	imports := map[string][]string{}
	for _, f := range uiFileNames() {
		if path.Ext(f) != ".js" {
			continue
		}
		b, err := uiFiles.ReadFile("ui/" + f)
		if err != nil {
			t.Fatal(err)
		}
		src := regexp.MustCompile(`(?m)^\s*//.*$`).ReplaceAllString(string(b), "") // what the code does, not what comments say
		lines := importLine.FindAllStringSubmatch(src, -1)
		if n := len(anyImport.FindAllString(src, -1)); n != len(lines) {
			t.Errorf("%s: %d imports, %d of them one line import {…} from './x.js'", f, n, len(lines))
		}
		imports[f] = []string{}
		for _, l := range lines {
			m := relative.FindStringSubmatch(l[1])
			if m == nil {
				t.Errorf("%s imports %q: want ./name.js", f, l[1])
				continue
			}
			if _, err := uiFiles.ReadFile("ui/" + m[1]); err != nil {
				t.Errorf("%s imports %s, which is not embedded", f, m[1])
			}
			imports[f] = append(imports[f], m[1])
		}
		if m := markup.FindString(src); m != "" {
			t.Errorf("%s builds markup from a string: %q (dom.js's el builds nodes)", f, m)
		}
		if m := network.FindString(src); m != "" && f != "api.js" {
			t.Errorf("%s talks to the daemon itself: %q (api.js does)", f, m)
		}
		for _, line := range strings.Split(src, "\n") {
			if global.MatchString(line) {
				t.Errorf("%s sets a global: %q", f, strings.TrimSpace(line))
			}
		}
	}
	reached := map[string]bool{}
	var walk func(string)
	walk = func(f string) {
		if reached[f] {
			return
		}
		reached[f] = true
		for _, g := range imports[f] {
			walk(g)
		}
	}
	walk("main.js")
	for f := range imports {
		if !reached[f] {
			t.Errorf("%s is embedded but no module reached from main.js imports it", f)
		}
	}
	if len(imports) < 10 || !reached["api.js"] {
		t.Errorf("modules: %v, want the console split by view, api.js among them", imports)
	}
}

// TestUINoExternalURLs: nothing in the console loads from outside the
// daemon: no src/href/url()/import/fetch naming http:// or https://.
func TestUINoExternalURLs(t *testing.T) {
	ref := regexp.MustCompile(`(?i)(src|href|action)\s*=\s*["']?\s*(https?:)?//|url\(\s*["']?\s*(https?:)?//|@import|(fetch|open|WebSocket|EventSource)\(\s*["'\x60](https?|wss?):`)
	anyURL := regexp.MustCompile(`(?i)\b(https?|wss?)://`)
	err := fs.WalkDir(uiFiles, "ui", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := uiFiles.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := ref.FindString(line); m != "" {
				t.Errorf("%s:%d references something outside: %q", p, i+1, strings.TrimSpace(line))
			}
			if m := anyURL.FindString(line); m != "" {
				t.Errorf("%s:%d names an absolute URL: %q", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// The scan can fail: a line that loads a script from elsewhere is caught.
	if ref.FindString(`<script src="https://cdn.example/x.js"></script>`) == "" || ref.FindString(`<link href="//cdn.example/x.css">`) == "" {
		t.Error("the scan misses an external src/href")
	}
}

// TestListSandboxes: GET /v1/sandboxes names every sandbox, default first,
// and no host path.
func TestListSandboxes(t *testing.T) {
	sbs := map[string]*core.Sandbox{}
	roots := map[string]string{}
	for _, n := range []string{"zeta", "default", "alpha"} {
		roots[n] = t.TempDir()
		sb, err := core.Open(n, roots[n], core.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		sbs[n] = sb
	}
	srv, err := New(Config{Sandboxes: sbs, Token: "tok", Log: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	r := localRequest("GET", "/v1/sandboxes", nil)
	r.Header.Set("Authorization", "Bearer tok")
	srv.Handler().ServeHTTP(rec, r)
	if rec.Code != 200 || rec.Header().Get("Content-Type") != "application/json" {
		t.Fatalf("status %d, type %q: %s", rec.Code, rec.Header().Get("Content-Type"), rec.Body)
	}
	var got api.SandboxList
	if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got.Sandboxes {
		names = append(names, s.Name)
	}
	if strings.Join(names, ",") != "default,alpha,zeta" || got.Count != 3 {
		t.Errorf("got %q (count %d), want default,alpha,zeta (3)", names, got.Count)
	}
	for _, root := range roots {
		if strings.Contains(rec.Body.String(), root) {
			t.Errorf("the listing names a host path: %s", rec.Body)
		}
	}
	checkAgainstOpenAPI(t, srv.Routes(), "GET", "/v1/sandboxes", resp{Status: 200, Header: rec.Header(), Body: rec.Body.Bytes()})
}

// TestListSandboxesDefaultExcludes: GET /v1/sandboxes names the daemon's
// default excludes, the very list its watchers skip when a client gives
// none, so the console's feed hides what the daemon's defaults are.
func TestListSandboxesDefaultExcludes(t *testing.T) {
	h := newHarness(t, harnessOpts{Token: "tok"})
	r := h.do(t, req{Method: "GET", Target: "/v1/sandboxes"})
	wantStatus(t, r, 200)
	var got struct {
		DefaultExcludes []string `json:"defaultExcludes"`
	}
	if err := json.Unmarshal(r.Body, &got); err != nil {
		t.Fatal(err)
	}
	if len(journal.DefaultExcludes) == 0 || !slices.Equal(got.DefaultExcludes, journal.DefaultExcludes) {
		t.Errorf("defaultExcludes: got %q, want the watchers' defaults %q", got.DefaultExcludes, journal.DefaultExcludes)
	}
	// A watcher made without a list reports the same names.
	w := h.do(t, req{Method: "POST", Target: "/v2/watch", Body: strings.NewReader(`{"path":"/"}`), Header: map[string]string{"Content-Type": "application/json"}})
	wantStatus(t, w, 200)
	l := h.do(t, req{Method: "GET", Target: "/v2/watch"})
	var list struct {
		Data struct {
			Watchers []struct {
				Exclude []string `json:"exclude"`
			} `json:"watchers"`
		} `json:"data"`
	}
	if err := json.Unmarshal(l.Body, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Data.Watchers) != 1 || !slices.Equal(list.Data.Watchers[0].Exclude, got.DefaultExcludes) {
		t.Errorf("the watcher's excludes: %s, want %q", l.Body, got.DefaultExcludes)
	}
}

// TestSocketEventOrigin: the watch socket's events carry origin, pid (fuse
// only) and a rename's old path after the seed's fields.
func TestSocketEventOrigin(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cases := []struct {
		name string
		in   journal.Event
		want string
	}{
		{"api write", journal.Event{Type: journal.Write, Path: "/a", Size: 3, Time: at, Origin: journal.API, Pid: 9},
			`{"type":"event","path":"/a","event":"write","timestamp":"2026-01-02T03:04:05Z","isDir":false,"size":3,"origin":"api"}`},
		{"fuse create", journal.Event{Type: journal.Create, Path: "/d", IsDir: true, Time: at, Origin: journal.Mirror, Pid: 4242, Uid: 1000},
			`{"type":"event","path":"/d","event":"create","timestamp":"2026-01-02T03:04:05Z","isDir":true,"size":0,"origin":"fuse","pid":4242}`},
		{"external rename", journal.Event{Type: journal.Rename, Path: "/new", OldPath: "/old", Time: at, Origin: journal.External},
			`{"type":"event","path":"/new","event":"rename","timestamp":"2026-01-02T03:04:05Z","isDir":false,"size":0,"origin":"external","oldPath":"/old"}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b, err := json.Marshal(named.SocketEvent(c.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != c.want {
				t.Errorf("got  %s\nwant %s", b, c.want)
			}
		})
	}
}
