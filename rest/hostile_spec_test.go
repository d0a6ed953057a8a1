package rest

import (
	"sort"
	"strings"
	"testing"
)

// What openapi.json says a route takes, read for the hostile-input table
// (hostile_test.go), and the benign and wrong values made from it.

// opSpec is what openapi.json says one route takes.
type opSpec struct {
	query      []paramSpec
	pathParams []string
	catchAll   string               // a catch-all path parameter ("*path"), "" when none
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
		if strings.HasPrefix(seg, "*") {
			o.catchAll = seg[1:]
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
