package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	yaml "go.yaml.in/yaml/v3"
)

// The sandboxd family against KEP-539.2's own OpenAPI document
// (rest/sandboxd/testdata/filesystem.yaml, a copy of the standard's): every
// path and method it lists is routed to the family (or, /health, to the
// service route the family shares), and each status it documents for an
// operation is provoked by a case here and answered with a body its schema
// takes, in a media type it lists. A documented status without a case fails
// the test, so a new version of the document asks for new cases.

const kepSpecURL = "https://sandfs.invalid/kep-539.2/filesystem.yaml"

// kepSpec is the standard's document, with a compiler that resolves its
// "#/components/..." references.
type kepSpec struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	base     string // the path of its server URL ("/v1")
}

func loadKEPSpec(t *testing.T) *kepSpec {
	t.Helper()
	raw, err := os.ReadFile("sandboxd/testdata/filesystem.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("filesystem.yaml: %v", err)
	}
	// Through JSON, so the schema compiler gets JSON's types.
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	res, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4) // OpenAPI 3.0's schemas are draft 4's, extended
	c.AssertFormat()                  // modified_at must be a date-time
	if err := c.AddResource(kepSpecURL, res); err != nil {
		t.Fatal(err)
	}
	servers, _ := doc["servers"].([]any)
	if len(servers) == 0 {
		t.Fatal("filesystem.yaml names no server")
	}
	u, _ := servers[0].(map[string]any)["url"].(string)
	_, base, _ := strings.Cut(strings.TrimPrefix(u, "http://"), "/")
	return &kepSpec{doc: doc, compiler: c, base: "/" + base}
}

// responses are an operation's documented responses by status, each
// resolved through its $ref, with the JSON pointer of its content.
func (k *kepSpec) responses(t *testing.T, op map[string]any) map[int]map[string]any {
	t.Helper()
	out := map[int]map[string]any{}
	rs, _ := op["responses"].(map[string]any)
	for code, r := range rs {
		status, err := strconv.Atoi(code)
		if err != nil {
			t.Fatalf("response %q is not a status", code)
		}
		rm := r.(map[string]any)
		ptr := ""
		if ref, ok := rm["$ref"].(string); ok {
			name := strings.TrimPrefix(ref, "#/components/responses/")
			rm = k.doc["components"].(map[string]any)["responses"].(map[string]any)[name].(map[string]any)
			ptr = "/components/responses/" + name
		}
		rm["x-pointer"] = ptr
		out[status] = rm
	}
	return out
}

// check validates an answer against the documented response: its media
// type is one the response lists (none: no body), its JSON body matches the
// schema.
func (k *kepSpec) check(r resp, doc map[string]any, opPtr string, status int) error {
	content, _ := doc["content"].(map[string]any)
	if len(content) == 0 {
		if len(r.Body) != 0 {
			return fmt.Errorf("documents no body, got %q", r.Body)
		}
		return nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if _, ok := content[ct]; !ok {
		return fmt.Errorf("Content-Type %q is not one the standard lists", ct)
	}
	if ct != "application/json" {
		return nil
	}
	ptr := doc["x-pointer"].(string)
	if ptr == "" {
		ptr = opPtr + "/responses/" + strconv.Itoa(status)
	}
	sch, err := k.compiler.Compile(kepSpecURL + "#" + ptr + "/content/application~1json/schema")
	if err != nil {
		return fmt.Errorf("compiling the schema: %v", err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Body))
	if err != nil {
		return fmt.Errorf("body is not JSON: %v: %q", err, r.Body)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("body %s does not match the standard's schema: %v", r.Body, err)
	}
	return nil
}

// TestSandboxdConformance runs, for each operation of the standard's
// document and each status it documents, a case that provokes it.
func TestSandboxdConformance(t *testing.T) {
	k := loadKEPSpec(t)
	h := newHarness(t, harnessOpts{})
	fixture := func() {
		h.writeFile(t, "/workspace/main.py", "print('hi')\n")
		h.writeFile(t, "/workspace/src/lib.py", "x = 1\n")
		h.mkdir(t, "/empty")
	}
	octet := map[string]string{"Content-Type": "application/octet-stream"}
	// cases: "METHOD /path status" → the request that provokes it (the
	// path under the server's base, "{path}" filled in).
	cases := map[string][]req{
		"GET /files/{path} 200": {
			{Method: "GET", Target: "/files/workspace/main.py"},
			{Method: "GET", Target: "/files/workspace"},
			{Method: "GET", Target: "/files/"},
		},
		"GET /files/{path} 403":    {{Method: "GET", Target: "/files/..%2F..%2Fetc%2Fpasswd"}},
		"GET /files/{path} 404":    {{Method: "GET", Target: "/files/workspace/nope.py"}},
		"PUT /files/{path} 204":    {{Method: "PUT", Target: "/files/workspace/new/app.py?mode=0755", Body: strings.NewReader("app"), Header: octet}},
		"PUT /files/{path} 400":    {{Method: "PUT", Target: "/files/workspace/bad.py?mode=0999", Body: strings.NewReader("bad"), Header: octet}},
		"PUT /files/{path} 403":    {{Method: "PUT", Target: "/files/..%2Fescape.py", Body: strings.NewReader("out"), Header: octet}},
		"DELETE /files/{path} 204": {{Method: "DELETE", Target: "/files/empty"}},
		"DELETE /files/{path} 403": {{Method: "DELETE", Target: "/files/workspace%2F..%2F..%2Fx"}},
		"DELETE /files/{path} 404": {{Method: "DELETE", Target: "/files/nope"}},
		"DELETE /files/{path} 409": {{Method: "DELETE", Target: "/files/workspace"}},
		"GET /metadata 200":        {{Method: "GET", Target: "/metadata"}},
		"GET /health 200":          {{Method: "GET", Target: "/health"}},
		"GET /health 503":          {{Method: "GET", Target: "/health"}}, // after EndStreams, below
	}
	routes := h.srv.Routes()
	used := map[string]bool{}
	var keys []string
	var later []func() // the 503 of /health: run once the daemon is stopping, after every other case
	paths := k.doc["paths"].(map[string]any)
	for p, item := range paths {
		for m, op := range item.(map[string]any) {
			if m == "parameters" {
				continue
			}
			method := strings.ToUpper(m)
			target := k.base + strings.ReplaceAll(p, "{path}", "x")
			rt, ok := matchRoute(routes, method, target)
			if !ok {
				t.Errorf("%s %s (the standard's %s %s) is not routed", method, target, method, p)
				continue
			}
			if want := map[bool]string{true: FamilyService, false: FamilySandboxd}[p == "/health"]; rt.Family != want {
				t.Errorf("%s %s is routed to the %s family, want %s", method, target, rt.Family, want)
			}
			opPtr := "/paths/" + pointer(p) + "/" + m
			for status, doc := range k.responses(t, op.(map[string]any)) {
				key := fmt.Sprintf("%s %s %d", method, p, status)
				if _, ok := cases[key]; !ok {
					t.Errorf("%s: the standard documents it, no case provokes it", key)
					continue
				}
				used[key] = true
				doc, opPtr, status := doc, opPtr, status
				run := func(key string) {
					for i, c := range cases[key] {
						fixture()
						c.Target = k.base + c.Target
						r := h.do(t, c)
						if r.Status != status {
							t.Errorf("%s case %d (%s %s): status %d, want %d: %s", key, i, c.Method, c.Target, r.Status, status, r.Body)
							continue
						}
						if err := k.check(r, doc, opPtr, status); err != nil {
							t.Errorf("%s case %d (%s %s): %v", key, i, c.Method, c.Target, err)
						}
					}
				}
				if status == 503 {
					later = append(later, func() { run(key) })
					continue
				}
				keys = append(keys, key)
				run(key)
			}
		}
	}
	h.srv.EndStreams(context.Background())
	for _, f := range later {
		f()
	}
	for key := range cases {
		if !used[key] {
			t.Errorf("case %s: the standard documents no such status", key)
		}
	}
	sort.Strings(keys)
	t.Logf("%d documented statuses answered as documented (+%d once stopping)", len(keys), len(later))
}
