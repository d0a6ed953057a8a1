package rest

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"sandfs/core"
	"sandfs/rest/aio"
	"sandfs/rest/named"
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
	h := &harness{root: root, logs: &syncBuffer{}, served: make(chan struct{}, 64)}
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

// opSpec is what openapi.json says one route takes.
type opSpec struct {
	query      []paramSpec
	pathParams []string
	bodyTypes  []string             // media types of the request body
	bodyNeeded bool                 // the body is required (else query cases send none)
	props      map[string]paramSpec // JSON body properties
	required   map[string]bool      // required JSON body properties
	bytesOut   bool                 // 200 answers application/octet-stream
	propExtras map[string]map[string]any
}

type paramSpec struct {
	name     string
	types    []string // JSON types accepted ("string", "integer", …; "any" when untyped)
	required bool
	base64   bool
}

func (s *spec) resolve(v map[string]any) map[string]any {
	for {
		ref, ok := v["$ref"].(string)
		if !ok {
			return v
		}
		cur := any(s.doc)
		for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
			m, _ := cur.(map[string]any)
			cur = m[tok]
		}
		v, _ = cur.(map[string]any)
	}
}

// schemaTypes lists the JSON types a schema accepts (anyOf, type lists,
// enums of strings); "any" when it says nothing.
func (s *spec) schemaTypes(v map[string]any) []string {
	v = s.resolve(v)
	var out []string
	switch t := v["type"].(type) {
	case string:
		out = append(out, t)
	case []any:
		for _, x := range t {
			out = append(out, x.(string))
		}
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := v[k].([]any); ok {
			for _, a := range alts {
				out = append(out, s.schemaTypes(a.(map[string]any))...)
			}
		}
	}
	if len(out) == 0 {
		if _, ok := v["enum"]; ok {
			return []string{"string"}
		}
		return []string{"any"}
	}
	return out
}

func (s *spec) opSpec(t *testing.T, rt Route) opSpec {
	t.Helper()
	op, ok := s.operation(rt)
	if !ok {
		t.Fatalf("%s %s is not in openapi.json", rt.Method, rt.Path)
	}
	var o opSpec
	for _, seg := range strings.Split(rt.Path, "/") {
		if strings.HasPrefix(seg, ":") {
			o.pathParams = append(o.pathParams, seg[1:])
		}
	}
	params, _ := op["parameters"].([]any)
	for _, p := range params {
		pm := s.resolve(p.(map[string]any))
		if pm["in"] != "query" {
			continue
		}
		req, _ := pm["required"].(bool)
		o.query = append(o.query, paramSpec{name: pm["name"].(string), types: s.schemaTypes(pm["schema"].(map[string]any)), required: req})
	}
	if rb, ok := op["requestBody"].(map[string]any); ok {
		o.bodyNeeded, _ = rb["required"].(bool)
		content, _ := rb["content"].(map[string]any)
		for ct, c := range content {
			o.bodyTypes = append(o.bodyTypes, ct)
			if ct != "application/json" {
				continue
			}
			sch := s.resolve(c.(map[string]any)["schema"].(map[string]any))
			o.props, o.required = map[string]paramSpec{}, map[string]bool{}
			props, _ := sch["properties"].(map[string]any)
			for name, ps := range props {
				pm := s.resolve(ps.(map[string]any))
				o.props[name] = paramSpec{name: name, types: s.schemaTypes(pm), base64: pm["contentEncoding"] == "base64"}
			}
			req, _ := sch["required"].([]any)
			for _, r := range req {
				o.required[r.(string)] = true
			}
		}
		sort.Strings(o.bodyTypes)
	}
	if resps, ok := op["responses"].(map[string]any); ok {
		if r200, ok := resps["200"].(map[string]any); ok {
			r200 = s.resolve(r200)
			if c, ok := r200["content"].(map[string]any); ok {
				_, o.bytesOut = c["application/octet-stream"]
			}
		}
	}
	return o
}

// ignored names parameters a route accepts and ignores (api.md §3, §5) or
// that carry the token: a hostile value there is not a refusal.
var ignoredParams = map[string]bool{"sessionId": true, "session_id": true, "asRoot": true, "sudo": true, "access_token": true, "api_key": true, "sandbox": true} // sandbox: the selector, read by every route of its families (selector.go), as the token by auth

func pathLike(name string) bool {
	switch name {
	case "path", "file", "source", "from", "destination", "dest", "to", "workingDir":
		return true
	}
	return false
}

// benign is a value that a route takes for a parameter, so that a case
// fails for its hostile part only.
func benign(name string, types []string) any {
	switch name {
	case "path", "file", "source", "from":
		return "/a.txt"
	case "destination", "dest", "to":
		return "/new.txt"
	case "workingDir":
		return "/"
	case "command":
		return "view"
	case "name":
		return "user.hostile"
	case "mode":
		if len(types) == 1 && types[0] == "string" {
			return "0644"
		}
	case "encoding":
		return "utf-8"
	case "pattern", "regex", "glob":
		return "alpha"
	case "timeout":
		return 1
	case "change_policy":
		return "ignore"
	}
	switch types[0] {
	case "integer", "number":
		return 1
	case "boolean":
		return false
	case "array":
		return []any{}
	case "object":
		return map[string]any{}
	}
	return "x"
}

// wrongValues are JSON values of a type the schema does not accept, and
// that pydantic's lax mode does not convert either where lax (the /v1/file
// routes, rest/aio/lax.go): there a number field takes "12" and true, so its
// wrong string is one that is no number, and a boolean is no wrong value.
func wrongValues(types []string, lax bool) map[string]any {
	acc := map[string]bool{}
	for _, t := range types {
		acc[t] = true
		if t == "integer" {
			acc["number-int"] = true
		}
		if t == "any" {
			return nil
		}
	}
	out := map[string]any{}
	numeric := acc["integer"] || acc["number"]
	if !acc["string"] {
		out["string"] = "12"
		if lax && numeric {
			out["string"] = "twelve"
		}
	}
	if !acc["integer"] && !acc["number"] {
		out["number"] = 7
	}
	if acc["integer"] && !acc["number"] {
		out["fraction"] = 1.5
	}
	if !acc["boolean"] && !(lax && numeric) {
		out["boolean"] = true
	}
	if !acc["object"] {
		out["object"] = map[string]any{"k": "v"}
	}
	if !acc["array"] {
		out["array"] = []any{"x"}
	}
	return out
}

// hostileCases generates the cases of one route.
func hostileCases(t *testing.T, s *spec, rt Route, o opSpec, ids map[string]string, outside string) []hostileCase {
	var cases []hostileCase
	pathVals := func(over map[string]string) map[string]string {
		v := map[string]string{}
		for _, p := range o.pathParams {
			v[p] = ids[p]
		}
		for k, x := range over {
			v[k] = x
		}
		return v
	}
	urlPath := func(pv map[string]string) string {
		segs := strings.Split(rt.Path, "/")
		for i, seg := range segs {
			if strings.HasPrefix(seg, ":") {
				segs[i] = url.PathEscape(pv[seg[1:]])
			}
		}
		return strings.Join(segs, "/")
	}
	baseQuery := func() url.Values {
		q := url.Values{}
		for _, p := range o.query {
			if p.required {
				q.Set(p.name, fmt.Sprint(benign(p.name, p.types)))
			}
		}
		return q
	}
	jsonBody := o.props != nil
	baseBody := func() map[string]any {
		if !jsonBody {
			return nil
		}
		b := map[string]any{}
		for name := range o.required {
			b[name] = benign(name, o.props[name].types)
		}
		if _, ok := o.props["timeout"]; ok {
			b["timeout"] = 1 // a wait that is not refused ends soon
		}
		// One source and one destination, so a case fails for its hostile part.
		for _, group := range [][]string{{"path", "file", "source", "from"}, {"destination", "dest", "to"}} {
			for _, n := range group {
				if _, ok := o.props[n]; ok {
					if _, set := b[n]; !set {
						b[n] = benign(n, o.props[n].types)
					}
					break
				}
			}
		}
		return b
	}
	target := func(pv map[string]string, q url.Values) string {
		if len(q) == 0 {
			return urlPath(pv)
		}
		return urlPath(pv) + "?" + q.Encode()
	}
	jsonReader := func(v any) func() io.Reader {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return func() io.Reader { return bytes.NewReader(b) }
	}
	add := func(c hostileCase) {
		if c.method == "" {
			c.method = rt.Method
		}
		if c.target == "" {
			c.target = target(pathVals(nil), baseQuery())
		}
		if c.body == nil && jsonBody && !c.noBody {
			c.body = jsonReader(baseBody())
		}
		if c.header == nil && jsonBody {
			c.header = map[string]string{"Content-Type": "application/json"}
		}
		cases = append(cases, c)
	}

	// Path parameters: unknown, NUL, dot-dot, overlong.
	for _, p := range o.pathParams {
		for label, v := range map[string]string{"unknown": "nope-" + p, "NUL": "a\x00b", "dotdot": "..", "overlong": longName + longName} {
			c := hostileCase{name: "path param " + p + " " + label, target: target(pathVals(map[string]string{p: v}), baseQuery()), mustFail: true}
			if label == "unknown" {
				c.status = []int{404} // an unknown watcher or sandbox
			}
			add(c)
		}
	}

	// A malformed query string, on the routes that read one.
	if slices.ContainsFunc(o.query, func(p paramSpec) bool { return !ignoredParams[p.name] }) {
		add(hostileCase{name: "malformed query", target: urlPath(pathVals(nil)) + "?path=%zz&x=%", mustFail: true, noBody: !o.bodyNeeded})
	}

	// Query parameters: hostile paths, escapes, wrong types, bad regexes.
	for _, p := range o.query {
		if ignoredParams[p.name] {
			continue
		}
		with := func(v string) string {
			q := baseQuery()
			if p.name == "workingDir" && q.Has("path") {
				q.Set("path", "a.txt") // relative, so the working directory counts
			}
			q.Set(p.name, v)
			return target(pathVals(nil), q)
		}
		add := func(c hostileCase) {
			c.noBody = !o.bodyNeeded
			add(c)
		}
		if pathLike(p.name) || p.name == "user" || p.name == "name" {
			for label, v := range badPaths {
				add(hostileCase{name: "query " + p.name + " " + label, target: with(v), mustFail: true})
			}
		}
		if pathLike(p.name) && p.name != "workingDir" {
			for label, v := range escapePaths(outside) {
				add(hostileCase{name: "query " + p.name + " escape " + label, target: with(v), escape: true})
			}
		}
		switch p.types[0] {
		case "integer", "number":
			add(hostileCase{name: "query " + p.name + " not a number", target: with("abc"), mustFail: true})
			add(hostileCase{name: "query " + p.name + " overflow", target: with("99999999999999999999999"), mustFail: true})
		case "boolean":
			add(hostileCase{name: "query " + p.name + " not a boolean", target: with("maybe"), mustFail: true})
		}
		if p.name == "regex" || (p.name == "pattern" && strings.HasSuffix(rt.Path, "grep")) {
			for _, re := range badRegexes {
				add(hostileCase{name: "query " + p.name + " bad regex " + re, target: with(re), mustFail: true})
			}
		}
	}

	// Range headers on the routes that answer bytes.
	if o.bytesOut && rt.Method == "GET" {
		for _, rg := range badRanges {
			add(hostileCase{name: "range " + rg[:min(len(rg), 24)], header: map[string]string{"Range": rg}, status: []int{200, 206, 416}})
		}
	}

	// JSON bodies.
	if jsonBody {
		for label, raw := range map[string]string{
			"empty": "", "truncated": `{"path":`, "not json": "nul", "array": `[1,2]`, "string": `"x"`, "number": `42`,
			"trailing data": `{"path":"/a.txt"} {}`, "unterminated string": `{"path":"/a.txt`, "bad escape": `{"path":"\x"}`,
			"control char": "{\"timeout\":1,\"path\":\"a\x01\"}", "invalid utf-8": "{\"timeout\":1,\"path\":\"\xff\xfe\"}", "nested deep": strings.Repeat("[", 20000),
		} {
			raw := raw
			if label == "empty" && !o.bodyNeeded {
				continue // the body is optional (§5 delete takes the query; a poll its defaults)
			}
			if label == "invalid utf-8" || label == "control char" {
				// Go's decoder takes invalid UTF-8 (replaced) and refuses a
				// raw control character: either way nothing may change.
				add(hostileCase{name: "body " + label, body: func() io.Reader { return strings.NewReader(raw) }, escape: true})
				continue
			}
			add(hostileCase{name: "body " + label, body: func() io.Reader { return strings.NewReader(raw) }, mustFail: true})
		}
		// bodyWith sets one property to v: the other names of the same
		// path are dropped (v1 "file" beside v2 "path"), and paths are made
		// relative when the working directory is the hostile part.
		bodyWith := func(name string, v any) map[string]any {
			b := baseBody()
			for _, group := range [][]string{{"path", "file"}} {
				if containsStr(group, name) {
					for _, n := range group {
						delete(b, n)
					}
				}
			}
			if name == "workingDir" {
				for k, x := range b {
					if s, ok := x.(string); ok && pathLike(k) && strings.HasPrefix(s, "/") {
						b[k] = s[1:]
					}
				}
			}
			b[name] = v
			return b
		}
		for name, p := range o.props {
			if ignoredParams[name] {
				continue
			}
			for tlabel, wv := range wrongValues(p.types, strings.HasPrefix(rt.Path, "/v1/file/")) {
				b := bodyWith(name, wv)
				add(hostileCase{name: "body " + name + " as " + tlabel, body: jsonReader(b), mustFail: true})
			}
			if pathLike(name) || (name == "user" && !strings.HasSuffix(rt.Path, "move")) || name == "name" {
				for label, v := range badPaths {
					b := bodyWith(name, v)
					add(hostileCase{name: "body " + name + " " + label, body: jsonReader(b), mustFail: true})
				}
			}
			if pathLike(name) && name != "workingDir" {
				for label, v := range escapePaths(outside) {
					b := bodyWith(name, v)
					add(hostileCase{name: "body " + name + " escape " + label, body: jsonReader(b), escape: true})
				}
			}
			if p.base64 {
				b := baseBody()
				b[name] = "@@not base64@@"
				add(hostileCase{name: "body " + name + " bad base64", body: jsonReader(b), mustFail: true})
			}
			if name == "encoding" {
				b := baseBody()
				b["encoding"], b["content"] = "base64", "@@not base64@@"
				add(hostileCase{name: "body content bad base64", body: jsonReader(b), mustFail: true})
			}
			if name == "regex" || (name == "pattern" && strings.HasSuffix(rt.Path, "grep")) {
				for _, re := range badRegexes {
					b := baseBody()
					b[name] = re
					add(hostileCase{name: "body " + name + " bad regex " + re, body: jsonReader(b), mustFail: true})
				}
			}
		}
		// Over the JSON body limit, announced and chunked.
		b := baseBody()
		b["padding"] = strings.Repeat("x", int(hostileLimits.json))
		over := jsonReader(b)
		add(hostileCase{name: "body over the JSON limit", body: over, mustFail: true, status: []int{413}})
		add(hostileCase{name: "body over the JSON limit, chunked", body: over, chunked: true, mustFail: true, status: []int{413}})
	}

	for _, ct := range o.bodyTypes {
		switch ct {
		case "application/x-tar":
			tarCases(rt, func(c hostileCase) { add(c) })
		case "multipart/form-data":
			multipartCases(func(c hostileCase) { add(c) })
		case "application/octet-stream":
			if rt.Family == FamilyNamed && rt.Method == "PUT" {
				big := func() io.Reader { return io.LimitReader(zeroReader{}, named.MaxWrite+1) }
				add(hostileCase{name: "body over 16 MiB", body: big, mustFail: true, status: []int{413}})
				add(hostileCase{name: "body over 16 MiB, chunked", body: big, chunked: true, mustFail: true, status: []int{413}})
			}
		}
	}
	return cases
}

func tarOf(entries ...*tar.Header) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range entries {
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		tw.WriteHeader(h)
		if h.Typeflag == tar.TypeReg {
			tw.Write(bytes.Repeat([]byte("t"), int(h.Size)))
		}
	}
	tw.Close()
	return buf.Bytes()
}

// badSparseTar is a GNU sparse archive (PAX format 1.0) whose data runs
// past what its map references: archive/tar fails its read with
// "sparse file contains unreferenced data".
func badSparseTar() []byte {
	rec := func(k, v string) string {
		s := " " + k + "=" + v + "\n"
		for d := 1; ; d++ {
			if total := len(s) + d; len(strconv.Itoa(total)) == d {
				return strconv.Itoa(total) + s
			}
		}
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	recs := rec("GNU.sparse.major", "1") + rec("GNU.sparse.minor", "0") + rec("GNU.sparse.name", "f") + rec("GNU.sparse.realsize", "10")
	tw.WriteHeader(&tar.Header{Name: "PaxHeaders/f", Size: int64(len(recs)), Mode: 0o644, Format: tar.FormatUSTAR})
	tw.Write([]byte(recs))
	tw.Flush()
	// tar.Writer makes no PAX header by hand: the first header is made a
	// regular one, then turned into one ('x') and its checksum redone.
	raw := b.Bytes()
	raw[156] = 'x'
	copy(raw[148:156], "        ")
	sum := 0
	for _, c := range raw[:512] {
		sum += int(c)
	}
	copy(raw[148:156], fmt.Sprintf("%06o\x00 ", sum))
	data := append([]byte("1\n0\n5\n"), make([]byte, 512-6)...)
	data = append(data, "hello, and more than the map says"...)
	tw.WriteHeader(&tar.Header{Name: "GNUSparseFile.0/f", Size: int64(len(data)), Mode: 0o644, Format: tar.FormatUSTAR})
	tw.Write(data)
	tw.Close()
	return b.Bytes()
}

// sparseTar is a 3 KiB GNU sparse archive (GNU tar -S) of one 1 TiB hole.
func sparseTar() []byte {
	b, err := os.ReadFile("../core/tar/testdata/sparse-1t.tar")
	if err != nil {
		panic(err)
	}
	return b
}

func tarCases(rt Route, add func(hostileCase)) {
	q := "?path=" + url.QueryEscape("/up")
	tgt := rt.Path + q
	tarHdr := map[string]string{"Content-Type": "application/x-tar"}
	body := func(b []byte) func() io.Reader { return func() io.Reader { return bytes.NewReader(b) } }
	many := make([]*tar.Header, hostileLimits.tarEntries+1)
	for i := range many {
		many[i] = &tar.Header{Name: fmt.Sprintf("f%d", i), Size: 1}
	}
	for label, b := range map[string][]byte{
		"garbage":               bytes.Repeat([]byte("not a tar "), 200),
		"truncated":             tarOf(&tar.Header{Name: "ok", Size: 1000})[:700],
		"dotdot entry":          tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: "../../escape", Size: 1}),
		"absolute entry":        tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: "/etc/escape", Size: 1}),
		"name over 255":         tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: longName, Size: 1}),
		"path over 4096":        tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: strings.TrimPrefix(longPath, "/"), Size: 1}),
		"symlink out then file": tarOf(&tar.Header{Name: "out", Typeflag: tar.TypeSymlink, Linkname: "../../outside"}, &tar.Header{Name: "out/x", Size: 1}),
		"hard link outside":     tarOf(&tar.Header{Name: "h", Typeflag: tar.TypeLink, Linkname: "../../outside/secret.txt"}),
		"device":                tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: "dev", Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}),
		"too many entries":      tarOf(many...),
		"over extracted bytes":  tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: "big", Size: hostileLimits.tarBytes + 1}),
		"sparse 1 TiB":          sparseTar(),
	} {
		add(hostileCase{name: "tar " + label, target: tgt, body: body(b), header: tarHdr, mustFail: true})
	}
	add(hostileCase{name: "tar malformed sparse", target: tgt, body: body(badSparseTar()), header: tarHdr, mustFail: true, status: []int{400}})
	overBody := tarOf(&tar.Header{Name: "ok", Size: 1}, &tar.Header{Name: "big", Size: hostileLimits.tar + 1})
	add(hostileCase{name: "tar over the body limit", target: tgt, body: body(overBody), header: tarHdr, mustFail: true, status: []int{413}})
	add(hostileCase{name: "tar over the body limit, chunked", target: tgt, body: body(overBody), header: tarHdr, chunked: true, mustFail: true, status: []int{413}})
	add(hostileCase{name: "tar with a JSON content type", target: tgt, body: body(tarOf(&tar.Header{Name: "ok", Size: 1})),
		header: map[string]string{"Content-Type": "application/json"}, mustFail: true, status: []int{415}})
}

func multipartCases(add func(hostileCase)) {
	form := func(fields [][2]string, file bool) (func() io.Reader, string) {
		var buf bytes.Buffer
		mw := multipart.NewWriter(&buf)
		for _, f := range fields {
			mw.WriteField(f[0], f[1])
		}
		if file {
			fw, _ := mw.CreateFormFile("file", "f.txt")
			fw.Write([]byte("uploaded"))
		}
		mw.Close()
		b := buf.Bytes()
		return func() io.Reader { return bytes.NewReader(b) }, mw.FormDataContentType()
	}
	for label, v := range badPaths {
		r, ct := form([][2]string{{"path", v}}, true)
		add(hostileCase{name: "multipart path " + label, body: r, header: map[string]string{"Content-Type": ct}, mustFail: true})
	}
	r, ct := form([][2]string{{"path", strings.Repeat("p", aio.MaxFormField+1)}}, true)
	add(hostileCase{name: "multipart field over its limit", body: r, header: map[string]string{"Content-Type": ct}, mustFail: true, status: []int{413}})
	r, ct = form([][2]string{{"path", "/up.txt"}}, false)
	add(hostileCase{name: "multipart without a file", body: r, header: map[string]string{"Content-Type": ct}, mustFail: true})
	add(hostileCase{name: "multipart garbage", body: func() io.Reader { return strings.NewReader("garbage") },
		header: map[string]string{"Content-Type": "multipart/form-data; boundary=xyz"}, mustFail: true})
	add(hostileCase{name: "multipart without a boundary", body: func() io.Reader { return strings.NewReader("--\r\n") },
		header: map[string]string{"Content-Type": "multipart/form-data"}, mustFail: true})
	add(hostileCase{name: "multipart truncated", body: func() io.Reader {
		b, _ := io.ReadAll(r())
		return bytes.NewReader(b[:len(b)/2])
	}, header: map[string]string{"Content-Type": ct}, mustFail: true})
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

// TestHostileWebsocket: the named watch socket answers every hostile
// message with {"type":"error"} and lives on; a message over its limit
// closes that socket (1009) and nothing else.
func TestHostileWebsocket(t *testing.T) {
	h := newNamedHarness(t)
	h.mkdir(t, "/w")
	before := h.tree(t)
	c := h.dialWatch(t, "/v1/sandboxes/default/fs/watch", nil)
	send := func(raw string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := c.Write(ctx, websocket.MessageText, []byte(raw)); err != nil {
			t.Fatalf("write %q: %v", raw, err)
		}
	}
	many := make([]string, named.MaxSocketPaths+1)
	for i := range many {
		many[i] = fmt.Sprintf("/w/p%d", i)
	}
	manyJSON, _ := json.Marshal(map[string]any{"type": "subscribe", "paths": many})
	for name, raw := range map[string]string{
		"not json":         "{",
		"array":            "[]",
		"type as number":   `{"type":1,"paths":["/w"]}`,
		"paths as string":  `{"type":"subscribe","paths":"/w"}`,
		"recursive string": `{"type":"subscribe","paths":["/w"],"recursive":"yes"}`,
		"unknown type":     `{"type":"unsubscribe","paths":["/w"]}`,
		"no paths":         `{"type":"subscribe","paths":[]}`,
		"NUL path":         `{"type":"subscribe","paths":["/w\u0000x"]}`,
		"overlong name":    `{"type":"subscribe","paths":["/` + longName + `"]}`,
		"overlong path":    `{"type":"subscribe","paths":["` + longPath + `"]}`,
		"relative wd":      `{"type":"subscribe","paths":["x"],"workingDir":"rel"}`,
		"too many paths":   string(manyJSON),
	} {
		send(raw)
		if m := wsRecv(t, c, 5*time.Second); m.Type != "error" || m.Message == "" {
			t.Errorf("%s: got %+v, want an error message", name, m)
		}
	}
	// The socket still works.
	send(`{"type":"subscribe","paths":["/w"]}`)
	if m := wsRecv(t, c, 5*time.Second); m.Type != "subscribed" {
		t.Fatalf("after the hostile messages: got %+v, want subscribed", m)
	}
	// Over the message limit: this socket is closed as too big.
	send(`{"type":"subscribe","paths":["` + strings.Repeat("a", named.MaxSocketMessage) + `"]}`)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		_, _, err := c.Read(ctx)
		if err != nil {
			if got := websocket.CloseStatus(err); got != websocket.StatusMessageTooBig {
				t.Errorf("closed with %v (%v), want 1009 message too big", got, err)
			}
			break
		}
	}
	// Another socket is served.
	c2 := h.dialWatch(t, "/v1/sandboxes/default/fs/watch", nil)
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	c2.Write(ctx2, websocket.MessageText, []byte(`{"type":"subscribe","paths":["/w"]}`))
	if m := wsRecv(t, c2, 5*time.Second); m.Type != "subscribed" {
		t.Errorf("a new socket: got %+v, want subscribed", m)
	}
	h.wantTree(t, before)
}
