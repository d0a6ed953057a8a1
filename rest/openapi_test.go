package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

const openapiURL = "https://sandfs.invalid/openapi.json"

// spec is the embedded OpenAPI document, loaded once, with a JSON Schema
// compiler that has the whole document as a resource so that every
// "#/components/..." reference resolves.
type spec struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	schemas  map[string]*jsonschema.Schema
}

var loadSpec = sync.OnceValues(func() (*spec, error) {
	var doc map[string]any
	if err := json.Unmarshal(openapiJSON, &doc); err != nil {
		return nil, fmt.Errorf("openapi.json: %v", err)
	}
	res, err := jsonschema.UnmarshalJSON(bytes.NewReader(openapiJSON))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(openapiURL, res); err != nil {
		return nil, err
	}
	return &spec{doc: doc, compiler: c, schemas: map[string]*jsonschema.Schema{}}, nil
})

func mustSpec(t *testing.T) *spec {
	t.Helper()
	s, err := loadSpec()
	if err != nil {
		t.Fatalf("loading openapi.json: %v", err)
	}
	return s
}

// openapiPath turns an httprouter pattern into an OpenAPI path template:
// ":name" and "*name" become "{name}".
func openapiPath(pattern string) string {
	parts := strings.Split(pattern, "/")
	for i, p := range parts {
		if strings.HasPrefix(p, ":") || strings.HasPrefix(p, "*") {
			parts[i] = "{" + p[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// matchRoute finds the table route serving method and path.
func matchRoute(routes []Route, method, path string) (Route, bool) {
	for _, rt := range routes {
		if rt.Method != method {
			continue
		}
		pp, sp := strings.Split(rt.Path, "/"), strings.Split(path, "/")
		ok := true
		for i := 0; ok && i < len(pp); i++ {
			switch {
			case strings.HasPrefix(pp[i], "*"):
				return rt, true
			case i >= len(sp):
				ok = false
			case strings.HasPrefix(pp[i], ":"):
				ok = sp[i] != ""
			default:
				ok = pp[i] == sp[i]
			}
		}
		if ok && len(pp) == len(sp) {
			return rt, true
		}
	}
	return Route{}, false
}

func (s *spec) operation(rt Route) (map[string]any, bool) {
	paths, _ := s.doc["paths"].(map[string]any)
	item, _ := paths[openapiPath(rt.Path)].(map[string]any)
	op, ok := item[strings.ToLower(rt.Method)].(map[string]any)
	return op, ok
}

// pointer escapes one JSON pointer token.
func pointer(tok string) string {
	return strings.ReplaceAll(strings.ReplaceAll(tok, "~", "~0"), "/", "~1")
}

// response finds the response object of rt for status, following a $ref,
// and returns it with the JSON pointer where it lives.
func (s *spec) response(rt Route, status int) (map[string]any, string, error) {
	op, ok := s.operation(rt)
	if !ok {
		return nil, "", fmt.Errorf("%s %s is not in openapi.json", rt.Method, rt.Path)
	}
	resps, _ := op["responses"].(map[string]any)
	r, ok := resps[strconv.Itoa(status)].(map[string]any)
	if !ok {
		return nil, "", fmt.Errorf("%s %s: status %d is not documented", rt.Method, rt.Path, status)
	}
	ptr := "/paths/" + pointer(openapiPath(rt.Path)) + "/" + strings.ToLower(rt.Method) + "/responses/" + strconv.Itoa(status)
	if ref, ok := r["$ref"].(string); ok {
		name, found := strings.CutPrefix(ref, "#/components/responses/")
		if !found {
			return nil, "", fmt.Errorf("unexpected $ref %q", ref)
		}
		comps, _ := s.doc["components"].(map[string]any)
		rs, _ := comps["responses"].(map[string]any)
		if r, ok = rs[name].(map[string]any); !ok {
			return nil, "", fmt.Errorf("dangling $ref %q", ref)
		}
		ptr = "/components/responses/" + pointer(name)
	}
	return r, ptr, nil
}

func (s *spec) schema(loc string) (*jsonschema.Schema, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sch, ok := s.schemas[loc]; ok {
		return sch, nil
	}
	sch, err := s.compiler.Compile(loc)
	if err != nil {
		return nil, err
	}
	s.schemas[loc] = sch
	return sch, nil
}

// validate checks one real answer of rt against the document: the status is
// documented, the Content-Type is one the status declares, and a JSON body
// validates against that content's schema.
func (s *spec) validate(rt Route, r resp) error {
	ro, ptr, err := s.response(rt, r.Status)
	if err != nil {
		return err
	}
	content, _ := ro["content"].(map[string]any)
	if len(content) == 0 {
		if len(r.Body) != 0 {
			return fmt.Errorf("status %d documents no body, got %q", r.Status, r.Body)
		}
		return nil
	}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	media, ok := content[ct].(map[string]any)
	if !ok {
		var want []string
		for k := range content {
			want = append(want, k)
		}
		sort.Strings(want)
		return fmt.Errorf("status %d: Content-Type %q is not among %v", r.Status, ct, want)
	}
	if ct != "application/json" && !strings.HasSuffix(ct, "+json") {
		return nil
	}
	if _, ok := media["schema"]; !ok {
		return fmt.Errorf("status %d %s has no schema", r.Status, ct)
	}
	sch, err := s.schema(openapiURL + "#" + ptr + "/content/" + pointer(ct) + "/schema")
	if err != nil {
		return fmt.Errorf("compiling the schema of %d %s: %v", r.Status, ct, err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Body))
	if err != nil {
		return fmt.Errorf("status %d: body is not JSON: %v: %q", r.Status, err, r.Body)
	}
	if err := sch.Validate(inst); err != nil {
		return fmt.Errorf("status %d: body %s does not match the schema: %v", r.Status, r.Body, err)
	}
	return nil
}

// checkAgainstOpenAPI is called by the harness on every answer. Answers no
// route produced (the router's 404 and 405) have no entry to check.
func checkAgainstOpenAPI(t *testing.T, routes []Route, method, path string, r resp) {
	t.Helper()
	rt, ok := matchRoute(routes, method, path)
	if !ok {
		return
	}
	if err := mustSpec(t).validate(rt, r); err != nil {
		t.Errorf("openapi: %s %s: %v", method, path, err)
	}
}

func TestOpenAPICoversRouteTable(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	s := mustSpec(t)
	if got := s.doc["openapi"]; got != "3.1.0" {
		t.Errorf("openapi version: got %v, want 3.1.0", got)
	}
	inTable := map[string]bool{}
	for _, rt := range h.srv.Routes() {
		key := rt.Method + " " + openapiPath(rt.Path)
		inTable[key] = true
		op, ok := s.operation(rt)
		if !ok {
			t.Errorf("route %s is not in openapi.json", key)
			continue
		}
		sec, hasSec := op["security"].([]any)
		public := hasSec && len(sec) == 0
		if public == rt.Auth {
			t.Errorf("route %s: table says auth %v, openapi security %v", key, rt.Auth, op["security"])
		}
		resps, _ := op["responses"].(map[string]any)
		ok2xx := false
		for _, code := range []string{"200", "201", "204"} { // 204: the sandboxd writes (KEP-539.2)
			_, ok := resps[code]
			ok2xx = ok2xx || ok
		}
		_, ok405 := resps["405"]
		notOffered := rt.Family == FamilyMCP && ok405 // GET and DELETE /mcp: stateless MCP serves POST only
		if !ok2xx && !notOffered {
			t.Errorf("route %s documents no 200 (nor 201, 204)", key)
		}
		if _, ok := resps["401"]; rt.Auth && !ok {
			t.Errorf("route %s needs auth but documents no 401", key)
		}
		if _, ok := op["description"].(string); !ok {
			t.Errorf("route %s has no description", key)
		}
	}
	paths, _ := s.doc["paths"].(map[string]any)
	for p, item := range paths {
		for m := range item.(map[string]any) {
			key := strings.ToUpper(m) + " " + p
			if !inTable[key] {
				t.Errorf("openapi.json documents %s, which is not in the route table", key)
			}
		}
	}
	// Every documented response resolves and its schemas compile.
	for _, rt := range h.srv.Routes() {
		op, _ := s.operation(rt)
		resps, _ := op["responses"].(map[string]any)
		for code := range resps {
			status, err := strconv.Atoi(code)
			if err != nil {
				t.Errorf("%s %s: response %q is not a status", rt.Method, rt.Path, code)
				continue
			}
			ro, ptr, err := s.response(rt, status)
			if err != nil {
				t.Error(err)
				continue
			}
			content, _ := ro["content"].(map[string]any)
			for ct := range content {
				if _, err := s.schema(openapiURL + "#" + ptr + "/content/" + pointer(ct) + "/schema"); err != nil {
					t.Errorf("%s %s %d %s: %v", rt.Method, rt.Path, status, ct, err)
				}
			}
		}
	}
}

func TestOpenAPIServed(t *testing.T) {
	h := newHarness(t, harnessOpts{Token: "tok"})
	r := h.do(t, req{Method: "GET", Target: "/openapi.json"})
	wantStatus(t, r, 200)
	if !bytes.Equal(r.Body, openapiJSON) {
		t.Errorf("served document differs from the embedded one")
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type: got %q, want application/json", ct)
	}
	wantProblem(t, h.do(t, req{Method: "GET", Target: "/openapi.json", NoAuth: true}), 401, "token_invalid")
}

// TestOpenAPIValidatorRejects makes sure the validation the harness runs
// can fail: a wrong body and an undocumented status are caught.
func TestOpenAPIValidatorRejects(t *testing.T) {
	s := mustSpec(t)
	stat := Route{Method: "GET", Path: "/v1/fs/stat", Family: FamilyAgent, Auth: true}
	hdr := map[string][]string{"Content-Type": {"application/json"}}
	cases := []struct {
		name string
		r    resp
	}{
		{"missing field", resp{Status: 200, Header: hdr, Body: []byte(`{"path":"/a","size":1}`)}},
		{"bad entryType", resp{Status: 200, Header: hdr, Body: []byte(`{"path":"/a","entryType":"symlink","size":1}`)}},
		{"extra field", resp{Status: 200, Header: hdr, Body: []byte(`{"path":"/a","entryType":"file","size":1,"x":1}`)}},
		{"undocumented status", resp{Status: 418, Header: hdr, Body: []byte(`{}`)}},
		{"wrong problem type", resp{Status: 404, Header: map[string][]string{"Content-Type": {"application/problem+json"}},
			Body: []byte(`{"type":"urn:sandbox-agent:error:conflict","title":"Conflict","status":404,"detail":"x"}`)}},
		{"wrong content type", resp{Status: 200, Header: map[string][]string{"Content-Type": {"text/plain"}}, Body: []byte(`x`)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := s.validate(stat, c.r); err == nil {
				t.Errorf("validate: got nil error, want one")
			}
		})
	}
	good := resp{Status: 200, Header: hdr, Body: []byte(`{"path":"/a","entryType":"file","size":1,"modified":"2024-05-01T10:00:00+00:00"}`)}
	if err := s.validate(stat, good); err != nil {
		t.Errorf("validate a good body: %v", err)
	}
}
