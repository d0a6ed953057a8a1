package rest

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"sandfs/api"
	"sandfs/rest/aio"
	"sandfs/rest/httpkit"
)

// badNameRoot makes, in h's root, two files whose names are not UTF-8
// ("a\xff", "a\xfe"), the file literally named "a\uFFFD" that both would
// turn into in JSON, a plain "ok", and a directory "b\xff" holding "inner".
// Each file's content names it, then a line "needle".
func badNameRoot(t *testing.T, h *harness) {
	t.Helper()
	for name, content := range map[string]string{
		"a\xff": "ff\nneedle\n", "a\xfe": "fe\nneedle\n", "a\uFFFD": "fffd\nneedle\n", "ok": "ok\nneedle\n",
	} {
		if err := os.WriteFile(filepath.Join(h.root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(h.root, "b\xff"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.root, "b\xff", "inner"), []byte("inner\nneedle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// jsonStrings is every string value in a JSON document.
func jsonStrings(t *testing.T, b []byte) []string {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("not JSON: %v: %.300s", err, b)
	}
	var out []string
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			out = append(out, x)
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return out
}

// TestNamesNotUTF8 lists a root holding names that are not UTF-8 through
// every family's listing, search and grep: no two files come back under
// one name (only the real "a\uFFFD" carries U+FFFD, once), the left-out
// count is in X-Sandfs-Skipped-Names, every returned path reads back its
// own file, and a request naming such a file by its bytes is refused and
// changes nothing.
func TestNamesNotUTF8(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	badNameRoot(t, h)
	js := map[string]string{"Content-Type": "application/json"}
	const fffd = "/a\uFFFD"
	listings := []struct {
		name, method, target, body string
	}{
		{"agent entries", "GET", "/v1/fs/entries?path=/", ""},
		{"v1 list", "POST", "/v1/file/list", `{"path":"/"}`},
		{"v1 list recursive", "POST", "/v1/file/list", `{"path":"/","recursive":true}`},
		{"v2 list", "GET", "/v2/fs/list?path=/", ""},
		{"v2 list recursive", "GET", "/v2/fs/list?path=/&recursive=true", ""},
		{"v2 search", "GET", "/v2/fs/search?path=/&pattern=*", ""},
		{"v1 find", "POST", "/v1/file/find", `{"path":"/","glob":"*"}`},
		{"v1 glob", "POST", "/v1/file/glob", `{"path":"/","pattern":"**/*"}`},
		{"v2 grep", "POST", "/v2/fs/grep", `{"path":"/","pattern":"needle"}`},
		{"v1 grep", "POST", "/v1/file/grep", `{"path":"/","pattern":"needle"}`},
		{"named list", "GET", "/v1/sandboxes/default/fs/list?path=/", ""},
		{"named list recursive", "GET", "/v1/sandboxes/default/fs/list?path=/&recursive=true", ""},
	}
	for _, c := range listings {
		t.Run(c.name, func(t *testing.T) {
			r := req{Method: c.method, Target: c.target}
			if c.body != "" {
				r.Body, r.Header = strings.NewReader(c.body), js
			}
			got := h.do(t, r)
			wantStatus(t, got, http.StatusOK)
			if n := got.Header.Get(httpkit.HeaderSkippedNames); n != "3" {
				t.Errorf("%s: %q, want 3 (a\\xff, a\\xfe, b\\xff)", httpkit.HeaderSkippedNames, n)
			}
			seen := 0
			var paths []string
			for _, s := range jsonStrings(t, got.Body) {
				switch {
				case s == fffd:
					seen++
					paths = append(paths, s)
				case s == "/ok":
					paths = append(paths, s)
				case strings.ContainsRune(s, utf8.RuneError) && s != "a\uFFFD":
					t.Errorf("an aliased name: %q", s)
				case strings.Contains(s, "inner"):
					t.Errorf("a file under a directory not UTF-8: %q", s)
				}
			}
			if seen != 1 {
				t.Errorf("%q reported %d times, want once: %.400s", fffd, seen, got.Body)
			}
			// Every path returned acts on its own file.
			for _, p := range paths {
				rd := h.do(t, req{Method: "GET", Target: "/v1/fs/file?path=" + url.QueryEscape(p)})
				wantStatus(t, rd, http.StatusOK)
				want := map[string]string{fffd: "fffd\nneedle\n", "/ok": "ok\nneedle\n"}[p]
				if string(rd.Body) != want {
					t.Errorf("read %q: %q, want %q", p, rd.Body, want)
				}
			}
		})
	}

	t.Run("stat and read of the real U+FFFD name", func(t *testing.T) {
		q := "path=" + url.QueryEscape(fffd)
		for _, target := range []string{"/v1/fs/file?" + q, "/v1/sandboxes/default/fs/read?" + q, "/v2/fs/download?" + q} {
			got := h.do(t, req{Method: "GET", Target: target})
			wantStatus(t, got, http.StatusOK)
			if string(got.Body) != "fffd\nneedle\n" {
				t.Errorf("%s: %q, want the content of a\\uFFFD", target, got.Body)
			}
		}
		st := h.do(t, req{Method: "GET", Target: "/v2/fs/stat?" + q})
		wantStatus(t, st, http.StatusOK)
		if !bytes.Contains(st.Body, []byte(`"size":12`)) {
			t.Errorf("stat: %s, want size 12", st.Body)
		}
	})

	// A path sent by its bytes (%FF in a query, a multipart field) is
	// refused: nothing is read, written or removed.
	refusals := []struct{ name, method, target, family string }{
		{"agent read", "GET", "/v1/fs/file?path=/a%FF", FamilyAgent},
		{"agent stat", "GET", "/v1/fs/stat?path=/a%FF", FamilyAgent},
		{"agent write", "PUT", "/v1/fs/file?path=/a%FF", FamilyAgent},
		{"agent delete", "DELETE", "/v1/fs/entry?path=/a%FF", FamilyAgent},
		{"agent entries", "GET", "/v1/fs/entries?path=/b%FF", FamilyAgent},
		{"v2 read", "GET", "/v2/fs/read?path=/a%FF", FamilyAIOv2},
		{"v2 stat", "GET", "/v2/fs/stat?path=/a%FF", FamilyAIOv2},
		{"v2 list", "GET", "/v2/fs/list?path=/b%FF", FamilyAIOv2},
		{"v2 download", "GET", "/v2/fs/download?path=/a%FF", FamilyAIOv2},
		{"named read", "GET", "/v1/sandboxes/default/fs/read?path=/a%FF", FamilyNamed},
		{"named stat", "GET", "/v1/sandboxes/default/fs/stat?path=/a%FF", FamilyNamed},
		{"named write", "PUT", "/v1/sandboxes/default/fs/write?path=/a%FF", FamilyNamed},
		{"named delete", "DELETE", "/v1/sandboxes/default/fs/delete?path=/a%FF", FamilyNamed},
		{"named list", "GET", "/v1/sandboxes/default/fs/list?path=/b%FF", FamilyNamed},
	}
	for _, c := range refusals {
		t.Run("refuse "+c.name, func(t *testing.T) {
			r := req{Method: c.method, Target: c.target}
			if c.method == "PUT" {
				r.Body = strings.NewReader("overwritten")
			}
			got := h.do(t, r)
			if got.Status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", got.Status, got.Body)
			}
			if err := checkFamilyShape(c.family, got); err != nil {
				t.Errorf("shape: %v: %s", err, got.Body)
			}
			if !bytes.Contains(got.Body, []byte("UTF-8")) {
				t.Errorf("the refusal does not say why: %s", got.Body)
			}
			if b, err := os.ReadFile(filepath.Join(h.root, "a\xff")); err != nil || string(b) != "ff\nneedle\n" {
				t.Errorf("a\\xff changed: %q %v", b, err)
			}
		})
	}
	t.Run("refuse upload", func(t *testing.T) {
		body, ct := multipartBody(t, [][2]string{{"path", "/a\xff"}}, "f", strings.NewReader("overwritten"))
		got := h.do(t, req{Method: "POST", Target: "/v2/fs/upload", Body: body, Header: map[string]string{"Content-Type": ct}})
		if got.Status != http.StatusBadRequest || !bytes.Contains(got.Body, []byte("UTF-8")) {
			t.Errorf("upload to a\\xff: %d %s, want 400", got.Status, got.Body)
		}
		if b, _ := os.ReadFile(filepath.Join(h.root, "a\xff")); string(b) != "ff\nneedle\n" {
			t.Errorf("a\\xff changed: %q", b)
		}
	})
	t.Run("upload-batch paths", func(t *testing.T) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		for _, n := range []string{"x\xff", "y"} {
			tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: 1, Typeflag: tar.TypeReg, Format: tar.FormatGNU})
			tw.Write([]byte("z"))
		}
		tw.Close()
		got := h.do(t, req{Method: "POST", Target: "/v1/fs/upload-batch?path=/up", Body: &buf,
			Header: map[string]string{"Content-Type": "application/x-tar"}})
		wantStatus(t, got, http.StatusOK)
		res := decode[api.FSUploadBatch](t, got)
		if strings.Join(res.Paths, "|") != "/up/y" || got.Header.Get(httpkit.HeaderSkippedNames) != "1" {
			t.Errorf("paths %q, %s %q; want [/up/y] and 1", res.Paths, httpkit.HeaderSkippedNames, got.Header.Get(httpkit.HeaderSkippedNames))
		}
	})
}

// TestNamesNotUTF8InWatchEvents: changes made in the root to names that
// are not UTF-8 never reach a watcher as U+FFFD paths; a rename from one
// is told as the create of its new name, a rename to one as the remove of
// its old name.
func TestNamesNotUTF8InWatchEvents(t *testing.T) {
	h, sb := newWatchHarness(t)
	wc := h.createWatch(t, `{"path":"/","recursive":true,"debounce":50}`)
	host := func(n string) string { return filepath.Join(h.root, n) }
	steps := []func() error{
		func() error { return os.WriteFile(host("c\xff"), []byte("x"), 0o644) },
		func() error { return os.Rename(host("c\xff"), host("c2")) },
		func() error { return os.Rename(host("c2"), host("c\xfe")) },
		func() error { return os.Remove(host("c\xfe")) },
		func() error { return os.WriteFile(host("end"), nil, 0o644) },
	}
	for _, f := range steps {
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	settleOutside(t, h, sb)
	got, _ := h.collect(t, wc.WatcherID, wc.InitialCursor, func(es []aio.WatchEvent) bool {
		for _, e := range es {
			if e.Path == "/end" {
				return true
			}
		}
		return false
	}, 0)
	var seen []string
	for _, e := range got {
		if strings.ContainsRune(e.Path+e.OldPath+e.RelativePath, utf8.RuneError) {
			t.Errorf("event on an aliased name: %s", evString(e))
		}
		if e.Path == "/c2" {
			seen = append(seen, e.Type)
		}
	}
	// c2 appears (by rename from c\xff) and goes (by rename to c\xfe).
	if s := strings.Join(seen, " "); !strings.HasPrefix(s, "create") || !strings.HasSuffix(s, "remove") {
		t.Errorf("events of /c2: %q, want a create first and a remove last", s)
	}
	_ = time.Second
}
