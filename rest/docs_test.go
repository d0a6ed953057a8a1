package rest

import (
	"encoding/json"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The repository's own reference (docs/api.md, docs/design.md) must stay
// true to the daemon and must be readable in any clone: these tests hold
// it to /openapi.json and keep every link inside the repository.

// repoRoot is the repository, from the rest package's directory.
const repoRoot = ".."

// routeDocumented reports whether api.md documents method and path (an
// OpenAPI path, "{param}" as written). The rule:
//   - the text "METHOD PATH" appears, PATH not followed by another path
//     character (so "GET /v2/fs/read?path" and a sentence's last "GET
//     /v1/fs/file." count, "GET /v2/fs/readx" and "GET /v2/fs.x" not);
//   - a /v1/sprites/{name}/… route is the alias of its /v1/sandboxes/{name}/…
//     route: documented when that one is and api.md names the alias;
//   - a GET under /ui/ (the console's files) is documented by "GET /ui/*".
func routeDocumented(doc, method, p string) bool {
	const sprites, sandboxes = "/v1/sprites/{name}/", "/v1/sandboxes/{name}/"
	if rest, ok := strings.CutPrefix(p, sprites); ok {
		if !strings.Contains(doc, "`/v1/sprites/{name}/…`") {
			return false
		}
		p = sandboxes + rest
	}
	if method == "GET" && strings.HasPrefix(p, "/ui/") && strings.Contains(doc, "`GET /ui/*`") {
		return true
	}
	re := regexp.MustCompile(regexp.QuoteMeta(method+" "+p) + `\.?($|[^A-Za-z0-9_./{}-])`)
	return re.MatchString(doc)
}

func TestRouteDocumentedRule(t *testing.T) {
	doc := "`GET /v2/fs/read?path` and `POST /v1/sandboxes/{name}/restore`; " +
		"`/v1/sprites/{name}/…` too; `GET /ui/*`; GET /v1/fs/file."
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{"GET", "/v2/fs/read", true},
		{"POST", "/v2/fs/read", false},
		{"GET", "/v2/fs/rea", false},
		{"GET", "/v2", false},
		{"POST", "/v1/sandboxes/{name}/restore", true},
		{"POST", "/v1/sprites/{name}/restore", true},
		{"GET", "/v1/sprites/{name}/events", false},
		{"GET", "/ui/{file}", true},
		{"POST", "/ui/{file}", false},
		{"GET", "/v1/fs/file", true},
		{"GET", "/v1/fs", false},
	} {
		if got := routeDocumented(doc, c.method, c.path); got != c.want {
			t.Errorf("routeDocumented(%s %s) = %v, want %v", c.method, c.path, got, c.want)
		}
	}
	if routeDocumented("`GET /v1/sandboxes/{name}/events`", "GET", "/v1/sprites/{name}/events") {
		t.Errorf("a sprites route counted without the alias named")
	}
}

// TestAPIDocCoversOpenAPI: every method and path of /openapi.json appears
// in docs/api.md.
func TestAPIDocCoversOpenAPI(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "docs", "api.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	var spec struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapiJSON, &spec); err != nil {
		t.Fatal(err)
	}
	var missing []string
	n := 0
	for p, item := range spec.Paths {
		for m := range item {
			n++
			if method := strings.ToUpper(m); !routeDocumented(doc, method, p) {
				missing = append(missing, method+" "+p)
			}
		}
	}
	if n < 90 {
		t.Errorf("openapi.json has %d operations; expected the whole table", n)
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("docs/api.md does not document %s (add it to §9, the route index)", m)
	}
}

// mdLink matches a Markdown link or image target: [text](target) or
// [text](target "title").
var mdLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)

// docFiles are the Markdown files a reader of the repository follows.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "RELIABILITY.md"}
	more, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range more {
		rel, _ := filepath.Rel(repoRoot, f)
		files = append(files, rel)
	}
	return files
}

// linkProblem says what is wrong with target, linked from the repository
// file from, or "" when it names a file of the repository that exists.
func linkProblem(from, target string) string {
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") ||
		strings.HasPrefix(target, "mailto:") || strings.HasPrefix(target, "#") {
		return ""
	}
	target, _, _ = strings.Cut(target, "#")
	if strings.HasPrefix(target, "/") || strings.HasPrefix(target, "file:") {
		return "an absolute path (not in a clone)"
	}
	p := path.Clean(path.Join(path.Dir(from), target))
	if p == ".." || strings.HasPrefix(p, "../") {
		return "leaves the repository"
	}
	if _, err := os.Stat(filepath.Join(repoRoot, filepath.FromSlash(p))); err != nil {
		return "no such file in the repository"
	}
	return ""
}

func TestLinkProblem(t *testing.T) {
	for _, c := range []struct {
		from, target string
		ok           bool
	}{
		{"README.md", "docs/api.md", true},
		{"README.md", "docs/api.md#2-errors-one-mapping-four-shapes", true},
		{"docs/api.md", "design.md", true},
		{"docs/api.md", "../README.md", true},
		{"README.md", "https://example.com/x", true},
		{"README.md", "#set-up", true},
		{"README.md", "../shared/API.md", false},
		{"docs/api.md", "../../shared/DESIGN.md", false},
		{"README.md", "/work/shared/API.md", false},
		{"README.md", "docs/API.md", false},
		{"README.md", "docs/nothing.md", false},
	} {
		if got := linkProblem(c.from, c.target); (got == "") != c.ok {
			t.Errorf("linkProblem(%s, %s) = %q, want ok %v", c.from, c.target, got, c.ok)
		}
	}
}

// TestDocLinksStayInRepo: every relative link of README.md, RELIABILITY.md
// and docs/*.md names a file of the repository, and no text points at a
// place outside it (../shared, this machine's /work).
func TestDocLinksStayInRepo(t *testing.T) {
	for _, f := range docFiles(t) {
		raw, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		text := string(raw)
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			if why := linkProblem(filepath.ToSlash(f), m[1]); why != "" {
				t.Errorf("%s: link %s: %s", f, m[1], why)
			}
		}
		for _, bad := range []string{"../shared", "/work/"} {
			if strings.Contains(text, bad) {
				t.Errorf("%s mentions %q, which is outside the repository", f, bad)
			}
		}
	}
}
