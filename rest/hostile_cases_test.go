package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strings"
	"testing"

	"sandfs/rest/named"
)

// The hostile cases of one route, from its parameters, path and body
// (hostile_test.go runs them).

// hostileCases generates the cases of one route.
func hostileCases(t *testing.T, s *spec, rt Route, o opSpec, ids map[string]string, outside string) []hostileCase {
	var cases []hostileCase
	pathVals := func(over map[string]string) map[string]string {
		v := map[string]string{}
		for _, p := range o.pathParams {
			v[p] = ids[p]
		}
		if o.catchAll != "" {
			v[o.catchAll] = "a.txt"
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
			if strings.HasPrefix(seg, "*") {
				// The whole path in one segment: "/" as %2F, which the
				// route decodes into separators (KEP-539.2).
				segs[i] = url.PathEscape(strings.TrimPrefix(pv[seg[1:]], "/"))
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

	// A catch-all path parameter is a file path (sandboxd's /v1/files/*path):
	// the hostile paths fail; a ".." above the root is the standard's 403,
	// a host path lands inside the root.
	if o.catchAll != "" {
		for label, v := range badPaths {
			add(hostileCase{name: "path " + label, target: target(pathVals(map[string]string{o.catchAll: v}), baseQuery()), mustFail: true})
		}
		for label, v := range escapePaths(outside) {
			c := hostileCase{name: "path escape " + label, target: target(pathVals(map[string]string{o.catchAll: v}), baseQuery()), escape: true}
			if climbs(v) {
				c.mustFail, c.escape, c.status = true, false, []int{403}
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
			if rt.Family == FamilySandboxd {
				sandboxdMultipartCases(func(c hostileCase) { add(c) })
				break
			}
			multipartCases(func(c hostileCase) { add(c) })
		case "application/octet-stream":
			if rt.Family == FamilySandboxd {
				// The upload limit (MaxTarBody) bounds a sandboxd PUT.
				big := func() io.Reader { return io.LimitReader(zeroReader{}, hostileLimits.tar+1) }
				add(hostileCase{name: "body over the upload limit", body: big, mustFail: true, status: []int{413}})
				add(hostileCase{name: "body over the upload limit, chunked", body: big, chunked: true, mustFail: true, status: []int{413}})
			}
			if rt.Family == FamilyNamed && rt.Method == "PUT" {
				big := func() io.Reader { return io.LimitReader(zeroReader{}, named.MaxWrite+1) }
				add(hostileCase{name: "body over 16 MiB", body: big, mustFail: true, status: []int{413}})
				add(hostileCase{name: "body over 16 MiB, chunked", body: big, chunked: true, mustFail: true, status: []int{413}})
			}
		}
	}
	return cases
}

// climbs reports whether a relative path's ".." climbs above where it
// starts (sandboxd refuses it, 403).
func climbs(p string) bool {
	depth := 0
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}
