package aio

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

// aioDecodeTargets are the request types of the AIO family's JSON routes,
// which decodeAIO reads.
var aioDecodeTargets = []struct {
	name string
	v    func() any
}{
	{"fileReadRequest", func() any { return new(fileReadRequest) }},
	{"fileWriteRequest", func() any { return new(fileWriteRequest) }},
	{"editRequest", func() any { return new(editRequest) }},
	{"pathRequest", func() any { return new(pathRequest) }},
	{"listRequest", func() any { return new(listRequest) }},
	{"findRequest", func() any { return new(findRequest) }},
	{"globRequest", func() any { return new(globRequest) }},
	{"transferRequest", func() any { return new(transferRequest) }},
	{"grepRequest", func() any { return new(grepRequest) }},
	{"searchRequest", func() any { return new(searchRequest) }},
	{"xattrSetRequest", func() any { return new(xattrSetRequest) }},
	{"watchCreateRequest", func() any { return new(watchCreateRequest) }},
	{"watchPollRequest", func() any { return new(watchPollRequest) }},
	{"watchWaitRequest", func() any { return new(watchWaitRequest) }},
}

// FuzzAIODecoders feeds any body to the AIO family's decode helper for each
// of its request types: a body is either taken (and then it was one valid JSON value, an
// object, within the limit) or refused with a 4xx; never a 5xx, never a
// panic.
func FuzzAIODecoders(f *testing.F) {
	for _, s := range []string{`{}`, `{"path":"/a"}`, `{"from":"a","to":"b","overwrite":true}`, `{"path":1}`, `{"uid":"root","gid":0}`,
		`{"mode":"0755","recursive":true}`, `[]`, `null`, `"x"`, `{"path":"a"} {}`, `{"path":"\u0000"}`, `{"timeout":1e999}`,
		`{"view_range":[1,-1]}`, `{"exclude":null,"include_patterns":["*"]}`, `{"cursor":-1,"limit":99999999999999999999}`, "", `{`, "\xff"} {
		f.Add([]byte(s))
	}
	const limit = 1 << 10
	f.Fuzz(func(t *testing.T, body []byte) {
		for _, dt := range aioDecodeTargets {
			for _, chunked := range []bool{false, true} {
				var rd io.Reader = bytes.NewReader(body)
				if chunked {
					rd = io.MultiReader(rd)
				}
				req := localRequest("POST", "/", rd)
				req.Header.Set("Content-Type", "application/json")
				if chunked {
					req.ContentLength = -1
				}
				v := dt.v()
				err := decodeAIO(httptest.NewRecorder(), req, limit, v, dt.name == "watchPollRequest")
				if err == nil {
					if len(bytes.TrimSpace(body)) == 0 {
						if dt.name != "watchPollRequest" {
							t.Fatalf("%s: an empty body was taken", dt.name)
						}
						continue
					}
					if !json.Valid(body) || len(body) > limit {
						t.Fatalf("%s: took %q, not one valid JSON value within the limit", dt.name, body)
					}
					if k := reflect.ValueOf(v).Elem().Kind(); k != reflect.Struct {
						t.Fatalf("%s: decoded into a %v", dt.name, k)
					}
					continue
				}
				k := httpkit.Classify(err)
				if k.Status < 400 || k.Status >= 500 || k.Internal {
					t.Fatalf("%s: body %q: %v classified %d (internal %v)", dt.name, body, err, k.Status, k.Internal)
				}
			}
		}
	})
}

// FuzzEditor drives the AIO editor (str_replace in each mode, insert, then
// undo) over any file content: an edit that succeeds writes what it says
// (new_content, and for ALL exactly strings.ReplaceAll), one that fails
// leaves the file as it was, and undo gives back the bytes before the edit.
func FuzzEditor(f *testing.F) {
	f.Add("a\nb\nc\n", "b", "B", 1, uint8(0))
	f.Add("a\r\nb\r\nc", "b\r\n", "x\ny\n", 3, uint8(1))
	f.Add("xxx", "x", "", 0, uint8(2))
	f.Add("aaa", "aa", "a", 5, uint8(3))
	f.Add("", "", "z", 0, uint8(4))
	f.Add("no newline", "line", "\n\n", -1, uint8(5))
	f.Add("\xff\xfe bad utf8", "bad", "good", 1, uint8(0))
	s, root := newTestFamily(f)
	host := filepath.Join(root, "e.txt")
	ctx := context.Background()
	modes := []string{"", "FIRST", "LAST", "ALL"}
	f.Fuzz(func(t *testing.T, content, old, repl string, line int, sel uint8) {
		if err := os.WriteFile(host, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		onDisk := func() string {
			b, err := os.ReadFile(host)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
		var res EditResult
		var err error
		mode := modes[int(sel)%len(modes)]
		insert := sel >= 128
		if insert {
			res, err = s.editInsert(ctx, "/e.txt", &line, &repl, core.Precondition{})
		} else {
			res, _, err = s.editReplace(ctx, "/e.txt", old, repl, mode, core.Precondition{})
		}
		if err != nil {
			if k := httpkit.Classify(err); k.Status >= 500 {
				t.Fatalf("edit failed with %d: %v", k.Status, err)
			}
			if got := onDisk(); got != content {
				t.Fatalf("a failed edit changed the file: %q -> %q (%v)", content, got, err)
			}
			return
		}
		got := onDisk()
		if res.NewContent == nil || *res.NewContent != got {
			t.Fatalf("new_content %v, file holds %q", res.NewContent, got)
		}
		if res.OldContent == nil || *res.OldContent != content {
			t.Fatalf("old_content %v, file held %q", res.OldContent, content)
		}
		switch {
		case insert:
			if len(splitLines(got)) < len(splitLines(content)) {
				t.Fatalf("insert lost lines: %q -> %q", content, got)
			}
		case mode == "ALL" && !isCRLF(content):
			if want := strings.ReplaceAll(content, old, repl); got != want {
				t.Fatalf("ALL: got %q, want %q", got, want)
			}
		case !isCRLF(content) && (mode == "FIRST" || mode == ""):
			if want := strings.Replace(content, old, repl, 1); got != want {
				t.Fatalf("%q: got %q, want %q", mode, got, want)
			}
		}
		if _, err := s.editUndo(ctx, "/e.txt", core.Precondition{}); err != nil {
			t.Fatalf("undo: %v", err)
		}
		if back := onDisk(); back != content {
			t.Fatalf("undo gave %q, want %q", back, content)
		}
	})
}
