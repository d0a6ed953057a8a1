package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/internal/testenv"
)

// The hostile-input table. Its cases are generated from the route
// table and, for each route, from what openapi.json says the route takes
// (query parameters and their types, the JSON body's properties and their
// types, the body's media type, whether it answers bytes): a route added to
// the table and documented is covered without touching this file.
//
// Every case is sent to a real server on loopback over a root holding a
// small fixture, with a sibling directory "outside" the root must never
// reach. A case either must fail (a 4xx in the family's error shape, or on
// /v1/file a 200 success:false for a filesystem failure, api.md §2) and
// change nothing on disk, or (escapes with `..` and absolute paths, which
// api.md §1 clamps into the root rather than refuses) must not touch
// anything outside the root. No case may get a 5xx, and no answer may carry
// a panic, a Go source position or a host path.

// Limits the hostile server runs with: small, so that "over every limit"
// costs a few KiB a case. The §5 write limit (16 MiB) and the upload form
// field limit (64 KiB) are constants and are crossed as they are.
var hostileLimits = struct {
	json, tar  int64
	tarEntries int
	tarBytes   int64
}{json: 4 << 10, tar: 64 << 10, tarEntries: 8, tarBytes: 32 << 10}

// hostileHarness is a harness whose root sits beside a directory
// "outside", with the small limits above.
func hostileHarness(t *testing.T) (*harness, string) {
	t.Helper()
	parent := t.TempDir()
	root := filepath.Join(parent, "root")
	outside := filepath.Join(parent, "outside")
	for _, d := range []string{root, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("OUTSIDE-SECRET"), 0o600); err != nil {
		t.Fatal(err)
	}
	sb, err := core.Open("default", root, core.Options{Limits: core.Limits{TarEntries: hostileLimits.tarEntries, TarBytes: hostileLimits.tarBytes}})
	if err != nil {
		t.Fatalf("core.Open: %v", err)
	}
	t.Cleanup(func() { sb.Close() })
	h := &harness{root: root, logs: &testenv.Buffer{}, served: make(chan struct{}, 64)}
	h.srv, err = New(Config{
		Sandboxes: map[string]*core.Sandbox{"default": sb},
		Limits:    Limits{MaxJSONBody: hostileLimits.json, MaxTarBody: hostileLimits.tar},
		Log:       slog.New(slog.NewTextHandler(h.logs, nil)),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.ts = httptest.NewServer(h.srv.Handler())
	t.Cleanup(h.ts.Close)
	t.Cleanup(func() {
		if t.Failed() && h.logs.Len() > 0 {
			t.Logf("server log:\n%s", h.logs.String())
		}
	})
	return h, parent
}

// hostileFixture (re)creates the root's content.
func hostileFixture(t *testing.T, root string) {
	t.Helper()
	ents, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if err := os.RemoveAll(filepath.Join(root, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{"a.txt": "alpha\nbeta\ngamma\n", "d/b.txt": "inner", "d/e/c.bin": "\x00\x01\x02"}
	for p, c := range files {
		hp := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(hp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(hp, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/d", filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
}

// hostileCase is one request and what it must get.
type hostileCase struct {
	name     string
	method   string
	target   string // path and query
	body     func() io.Reader
	chunked  bool // send without Content-Length
	header   map[string]string
	mustFail bool  // a 4xx in the family's shape, nothing changed on disk
	status   []int // when set, the status must be one of these
	escape   bool  // may succeed inside the root; nothing outside may change
	noBody   bool  // send no body even where the route takes an optional one
}

// Hostile values.
var (
	longName   = strings.Repeat("n", 256)
	longPath   = "/" + strings.TrimSuffix(strings.Repeat(strings.Repeat("p", 255)+"/", 17), "/") // > 4096 bytes
	deepPath   = "/" + strings.Repeat("d/", 2049) + "f"                                          // 2050 levels, > 4096 bytes
	badPaths   = map[string]string{"NUL": "/a\x00.txt", "NUL at end": "/a.txt\x00", "NUL only": "\x00", "name over 255": "/" + longName, "path over 4096": longPath, "deep path": deepPath}
	badRegexes = []string{"(", "[z-a]", "a**", "(?P<", `\`, "(.*){1,1000}"}
	badRanges  = []string{"bytes=999999-", "bytes=5-2", "bytes=abc", "bytes=-", "bytes=--1", "bytes=0-1," + strings.Repeat("0-1,", 3000), "bytes=-99999999999999999999999"}
)

// escapes resolve outside the root if resolution were naive.
func escapePaths(outside string) map[string]string {
	return map[string]string{
		"dotdot":          "../outside/secret.txt",
		"dotdot absolute": "/../../outside/secret.txt",
		"host path":       filepath.Join(outside, "secret.txt"),
		"dotdot deep":     strings.Repeat("../", 64) + "etc/passwd",
		"through link":    "/link/../../outside/secret.txt",
	}
}

// TestHostileInput runs the hostile table over every route.
func TestHostileInput(t *testing.T) {
	h, parent := hostileHarness(t)
	s := mustSpec(t)
	hostileFixture(t, h.root)
	outside := filepath.Join(parent, "outside")
	client := &http.Client{Timeout: 30 * time.Second}

	// A live watcher for the routes under /watch/:id, so their other
	// parameters are reached; the "unknown" path-parameter cases use
	// another id.
	var created struct {
		Data struct {
			WatcherID string `json:"watcher_id"`
		} `json:"data"`
	}
	res, err := client.Post(h.ts.URL+"/v2/watch", "application/json", strings.NewReader(`{"path":"/d"}`))
	if err != nil {
		t.Fatal(err)
	}
	json.NewDecoder(res.Body).Decode(&created)
	res.Body.Close()
	if created.Data.WatcherID == "" {
		t.Fatalf("creating a watcher: status %d", res.StatusCode)
	}
	ids := map[string]string{"id": created.Data.WatcherID, "name": "default"}

	clean := snapshot(t, parent)
	total, failures := 0, 0
	for _, rt := range h.srv.Routes() {
		if rt.Family == FamilyService {
			continue // no input to be hostile with
		}
		o := s.opSpec(t, rt)
		for _, c := range hostileCases(t, s, rt, o, ids, outside) {
			total++
			name := rt.Method + " " + rt.Path + ": " + c.name
			var body io.Reader
			if c.body != nil {
				body = c.body()
				if c.chunked {
					body = io.MultiReader(body) // hides the length: sent chunked
				}
			}
			hr, err := http.NewRequest(c.method, h.ts.URL+c.target, body)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			for k, v := range c.header {
				hr.Header.Set(k, v)
			}
			res, err := client.Do(hr)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				failures++
				continue
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			r := resp{Status: res.StatusCode, Header: res.Header, Body: b}

			var problems []string
			if r.Status >= 500 && !(c.escape && r.Status == 503 && bytes.Contains(b, []byte(`"error_type":"timeout"`))) {
				// (A watch wait on a path that exists nowhere times out: 503
				// is its documented answer, api.md §4.)
				problems = append(problems, "a 5xx")
			}
			if len(c.status) > 0 && !containsInt(c.status, r.Status) {
				problems = append(problems, fmt.Sprintf("status not one of %v", c.status))
			}
			failed := r.Status >= 400 || (rt.Family == FamilyAIOv1 && r.Status == 200 && bytes.Contains(b, []byte(`"success":false`)))
			if c.mustFail && !failed {
				problems = append(problems, "not refused")
			}
			if failed && rt.Method != "HEAD" {
				if err := checkFamilyShape(rt.Family, r); err != nil {
					problems = append(problems, "shape: "+err.Error())
				}
			}
			if bytes.Contains(b, []byte(h.root)) {
				problems = append(problems, "answer carries a host path")
			}
			if bytes.Contains(b, []byte("OUTSIDE-SECRET")) {
				problems = append(problems, "answer carries the content of a file outside the root")
			}
			after := snapshot(t, parent)
			changed := snapshotDiff(clean, after)
			if changed != "" {
				outsideChanged := false
				for k := range after {
					if strings.HasPrefix(k, "outside") && after[k] != clean[k] {
						outsideChanged = true
					}
				}
				for k := range clean {
					if _, ok := after[k]; !ok && strings.HasPrefix(k, "outside") {
						outsideChanged = true
					}
				}
				switch {
				case outsideChanged:
					problems = append(problems, "changed the disk OUTSIDE the root:\n"+changed)
				case !c.escape || failed:
					problems = append(problems, "changed the disk:\n"+changed)
				}
				hostileFixture(t, h.root)
			}
			if len(problems) > 0 {
				failures++
				t.Errorf("%s\n  got %d %s\n  %s", name, r.Status, truncate(b, 300), strings.Join(problems, "\n  "))
			}
		}
	}
	t.Logf("hostile table: %d cases over %d routes, %d failing", total, len(h.srv.Routes()), failures)
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}
