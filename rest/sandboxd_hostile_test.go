package rest

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Hostile paths on every sandboxd method, beside the generated table of
// hostile_test.go: every way a path could leave the root (dot-dot raw and
// encoded, absolute host paths, symlinks up, to host paths, to the
// outside directory itself, chains of them), sent raw over the wire. None
// may answer 5xx, carry the secret or a host path, or change anything
// outside the root; a dot-dot above the root is 403.

func TestSandboxdHostilePaths(t *testing.T) {
	h, parent := sandboxdFixture(t)
	outside := filepath.Join(parent, "outside")
	if err := os.Mkdir(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("OUTSIDE-SECRET"), 0o644); err != nil {
		t.Fatal(err)
	}
	links := map[string]string{
		"/out-abs":  outside,      // a host path: the root's <that path>
		"/out-rel":  "../outside", // climbs, clamped at the root
		"/out-deep": strings.Repeat("../", 40) + strings.TrimPrefix(outside, "/"),
		"/chain":    "out-rel", // a link to a link
		"/d/up":     "../../outside/secret.txt",
		"/loop-a":   "loop-b",
		"/loop-b":   "loop-a",
	}
	for l, target := range links {
		h.symlink(t, target, l)
	}
	clean := snapshot(t, parent)
	type path struct {
		name, url string
		climbs    bool // a dot-dot above the root: 403
	}
	paths := []path{
		{"dotdot raw", "/v1/files/../outside/secret.txt", true},
		{"dotdot encoded", "/v1/files/..%2Foutside%2Fsecret.txt", true},
		{"dotdot encoded dots", "/v1/files/%2E%2E/outside/secret.txt", true},
		{"dotdot after a directory", "/v1/files/d/../../outside/secret.txt", true},
		{"dotdot deep", "/v1/files/" + strings.Repeat("../", 64) + "etc/passwd", true},
		{"dotdot backslash", "/v1/files/..\\outside\\secret.txt", false}, // a name, not a separator
		{"host path", "/v1/files/" + strings.TrimPrefix(outside, "/") + "/secret.txt", false},
		{"host path, double slash", "/v1/files/" + outside + "/secret.txt", false},
		{"symlink to a host path", "/v1/files/out-abs/secret.txt", false},
		{"symlink climbing", "/v1/files/out-rel/secret.txt", false},
		{"symlink climbing deep", "/v1/files/out-deep/secret.txt", false},
		{"symlink chain", "/v1/files/chain/secret.txt", false},
		{"symlink to the file outside", "/v1/files/d/up", false},
		{"symlink loop", "/v1/files/loop-a", false},
		{"symlink, then dotdot", "/v1/files/out-abs/../../secret.txt", false},
	}
	client := &http.Client{Timeout: 10 * time.Second}
	for _, p := range paths {
		for _, method := range []string{"GET", "HEAD", "PUT", "DELETE", "DELETE?recursive=true"} {
			m, q, _ := strings.Cut(method, "?")
			target := p.url
			if q != "" {
				target += "?" + q
			}
			t.Run(p.name+" "+method, func(t *testing.T) {
				hr, err := http.NewRequest(m, h.ts.URL+target, strings.NewReader("hostile"))
				if err != nil {
					t.Fatal(err)
				}
				if m != "PUT" {
					hr.Body, hr.ContentLength = nil, 0
				}
				res, err := client.Do(hr) // net/http sends the path as written: no dot segment is cleaned
				if err != nil {
					t.Fatal(err)
				}
				var b bytes.Buffer
				b.ReadFrom(res.Body)
				res.Body.Close()
				switch {
				case res.StatusCode >= 500:
					t.Errorf("%d: %s", res.StatusCode, b.Bytes())
				case p.climbs && res.StatusCode != 403:
					t.Errorf("%d, want 403: %s", res.StatusCode, b.Bytes())
				case res.StatusCode >= 400 && m != "HEAD":
					if err := checkFamilyShape(FamilySandboxd, resp{Status: res.StatusCode, Header: res.Header, Body: b.Bytes()}); err != nil {
						t.Errorf("shape: %v", err)
					}
				}
				if bytes.Contains(b.Bytes(), []byte("OUTSIDE-SECRET")) {
					t.Errorf("the answer carries the secret")
				}
				// (A host path the client sent comes back as the API path it
				// is; the root's own host path never does.)
				if bytes.Contains(b.Bytes(), []byte(h.root)) {
					t.Errorf("the answer carries the root's host path: %s", b.Bytes())
				}
				// Nothing beside the root (outside/, secret.txt) changes.
				inRoot := func(k string) bool { return k == "root" || strings.HasPrefix(k, "root/") }
				after := snapshot(t, parent)
				for k, v := range clean {
					if !inRoot(k) && after[k] != v {
						t.Fatalf("changed OUTSIDE the root: %s", k)
					}
				}
				for k := range after {
					if _, ok := clean[k]; !ok && !inRoot(k) {
						t.Fatalf("created OUTSIDE the root: %s", k)
					}
				}
			})
		}
	}
}

// FuzzSandboxdPath sends any path (as the route decodes it: one escaped
// segment) to GET, PUT and DELETE: never a 5xx or a panic, never a change
// beside the root, a climbing dot-dot always 403, an error always in the
// family's shape.
func FuzzSandboxdPath(f *testing.F) {
	for _, s := range []string{"a.txt", "", "/", "..", "../x", "a/../..", "d/./b.txt", "a\x00b", "//etc/passwd",
		strings.Repeat("../", 50), strings.Repeat("n", 300), "d/link-up", "abs-link/../../x", "\xff\xfe", "%2e%2e"} {
		f.Add(s)
	}
	h, parent := sandboxdFixture(f)
	clean := snapshot(f, parent)
	handler := h.srv.Handler()
	f.Fuzz(func(t *testing.T, p string) {
		target := "/v1/files/" + url.PathEscape(p)
		for _, m := range []string{"GET", "PUT", "DELETE"} {
			var body io.Reader
			if m == "PUT" {
				body = strings.NewReader("fuzz")
			}
			req := localRequest(m, target, body)
			r := serveLocal(handler, req)
			if r.Status >= 500 {
				t.Fatalf("%s %q: %d %s", m, p, r.Status, r.Body)
			}
			if climbs(p) && r.Status != 403 {
				t.Fatalf("%s %q: %d, want 403", m, p, r.Status)
			}
			if r.Status >= 400 {
				if err := checkFamilyShape(FamilySandboxd, r); err != nil {
					t.Fatalf("%s %q: %v: %s", m, p, err, r.Body)
				}
			}
		}
		after := snapshot(t, parent)
		for k, v := range clean {
			if !strings.HasPrefix(k, "root") && after[k] != v {
				t.Fatalf("%q changed %s beside the root", p, k)
			}
		}
	})
}
