package rest

import (
	"encoding/json"
	"reflect"
	"testing"

	"sandfs/rest/aio"
)

// TestV1Lax: /v1/file takes what pydantic's lax mode takes (numbers as
// strings, floats without a fraction, "true" and 0/1 for bools) and
// refuses the rest with a 422 whose detail is the 1.x schema's
// HTTPValidationError; /v2 stays strict.
func TestV1Lax(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/f.txt", "one\ntwo\nthree\n")
	ok := []struct{ name, body, want string }{
		{"numbers as strings", `{"file":"/f.txt","start_line":"1","end_line":" 2 "}`, "two\n"},
		{"float without fraction", `{"file":"/f.txt","start_line":1.0,"end_line":2}`, "two\n"},
		{"bool as string", `{"file":"/f.txt","start_line":0,"end_line":1,"sudo":"false"}`, "one\n"},
		{"bool as yes", `{"file":"/f.txt","start_line":0,"end_line":1,"sudo":"YES"}`, "one\n"},
		{"bool as 0", `{"file":"/f.txt","start_line":0,"end_line":1,"sudo":0}`, "one\n"},
		{"int from bool", `{"file":"/f.txt","start_line":true,"end_line":2}`, "two\n"},
	}
	for _, c := range ok {
		t.Run(c.name, func(t *testing.T) {
			got := wantAIO[aio.FileReadResult](t, h.do(t, jsonReq("POST", "/v1/file/read", c.body)))
			if got.Content != c.want {
				t.Errorf("content %q, want %q", got.Content, c.want)
			}
		})
	}
	refused := []struct {
		name, target, body string
		loc                []any
		typ                string
	}{
		{"a fraction", "/v1/file/read", `{"file":"/f.txt","start_line":1.5}`, []any{"body", "start_line"}, "int_type"},
		{"not a number", "/v1/file/read", `{"file":"/f.txt","start_line":"one"}`, []any{"body", "start_line"}, "int_type"},
		{"not a bool", "/v1/file/read", `{"file":"/f.txt","sudo":"maybe"}`, []any{"body", "sudo"}, "bool_type"},
		{"a number for the path", "/v1/file/read", `{"file":5}`, []any{"body", "file"}, "string_type"},
		{"v2 stays strict", "/v2/fs/write", `{"path":"/g.txt","content":"x","append":"true"}`, nil, ""},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			r := h.do(t, jsonReq("POST", c.target, c.body))
			if r.Status != 422 {
				t.Fatalf("status %d, want 422: %s", r.Status, r.Body)
			}
			var body struct {
				Success *bool `json:"success"`
				Detail  []struct {
					Loc  []any  `json:"loc"`
					Msg  string `json:"msg"`
					Type string `json:"type"`
				} `json:"detail"`
			}
			if err := json.Unmarshal(r.Body, &body); err != nil {
				t.Fatal(err)
			}
			if c.loc == nil {
				if body.Detail != nil {
					t.Errorf("v2 answered a detail: %s", r.Body)
				}
				return
			}
			if body.Success == nil || *body.Success || len(body.Detail) != 1 {
				t.Fatalf("body %s: want success false and one detail", r.Body)
			}
			d := body.Detail[0]
			if !reflect.DeepEqual(d.Loc, c.loc) || d.Type != c.typ || d.Msg == "" {
				t.Errorf("detail %+v, want loc %v type %s", d, c.loc, c.typ)
			}
		})
	}
}
