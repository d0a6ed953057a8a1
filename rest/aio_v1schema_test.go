package rest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// The published 1.x schema of /v1/file/* (a copy of
// ../shared/reference/aio-v1-file-openapi.json, since CI clones only this
// repository): a 1.x client parses our /v1/file answers with its response
// models, so every 200 answer of a route it documents must validate.

const v1SchemaURL = "https://sandfs.invalid/aio-v1-file-openapi.json"

type v1Spec struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	schemas  map[string]*jsonschema.Schema
}

var loadV1Spec = sync.OnceValues(func() (*v1Spec, error) {
	raw, err := os.ReadFile("testdata/aio-v1-file-openapi.json")
	if err != nil {
		return nil, err
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, err
	}
	res, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(v1SchemaURL, res); err != nil {
		return nil, err
	}
	return &v1Spec{doc: doc, compiler: c, schemas: map[string]*jsonschema.Schema{}}, nil
})

// v1SchemaErr validates a 200 answer of POST route against the 1.x
// schema's response model for it; routes the schema does not document
// (stat, mkdir, copy, move, delete are sandfs's) are not checked: checked
// says whether a check ran.
func v1SchemaErr(route string, r resp) (checked bool, err error) {
	if r.Status != 200 {
		return false, nil
	}
	s, err := loadV1Spec()
	if err != nil {
		return false, fmt.Errorf("loading the 1.x schema: %v", err)
	}
	paths := s.doc["paths"].(map[string]any)
	item, ok := paths[route].(map[string]any)
	if !ok {
		return false, nil
	}
	if _, ok := item["post"]; !ok {
		return false, nil
	}
	ptr := "/paths/" + pointer(route) + "/post/responses/200/content/application~1json/schema"
	s.mu.Lock()
	sch, ok := s.schemas[ptr]
	if !ok {
		sch, err = s.compiler.Compile(v1SchemaURL + "#" + ptr)
		if err != nil {
			s.mu.Unlock()
			return true, fmt.Errorf("compiling the 1.x schema of %s: %v", route, err)
		}
		s.schemas[ptr] = sch
	}
	s.mu.Unlock()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(r.Body))
	if err != nil {
		return true, fmt.Errorf("%s: body is not JSON: %v", route, err)
	}
	if err := sch.Validate(inst); err != nil {
		return true, fmt.Errorf("1.x schema: %s: body %s does not match: %v", route, r.Body, err)
	}
	return true, nil
}

func checkV1Schema(t *testing.T, route string, r resp) bool {
	t.Helper()
	checked, err := v1SchemaErr(route, r)
	if err != nil {
		t.Error(err)
	}
	return checked
}

// v1 posts body to a /v1/file route and validates a 200 answer against the
// 1.x schema (and, as every harness answer, against our own document).
func (h *harness) v1(t *testing.T, route, body string) resp {
	t.Helper()
	r := h.do(t, req{Method: "POST", Target: route, Body: strings.NewReader(body)})
	checkV1Schema(t, route, r)
	return r
}

func TestV1SchemaValidatorRejects(t *testing.T) {
	hdr := map[string][]string{"Content-Type": {"application/json"}}
	// FileReadResult requires content and file.
	bad := resp{Status: 200, Header: hdr, Body: []byte(`{"success":true,"message":"ok","data":{"content":1,"file":"/a"}}`)}
	if _, err := v1SchemaErr("/v1/file/read", bad); err == nil {
		t.Errorf("a FileReadResult with a numeric content validated")
	}
	good := resp{Status: 200, Header: hdr, Body: []byte(`{"success":true,"message":"ok","data":{"content":"x","file":"/a"},"hint":null}`)}
	if !checkV1Schema(t, "/v1/file/read", good) {
		t.Errorf("/v1/file/read was not checked")
	}
}
