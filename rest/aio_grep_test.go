package rest

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// slowLines is n bytes of 72-byte lines.
func slowLines(n int) string {
	l := "the quick brown fox jumps over the lazy dog 0123456789 abcdefghijklmnop\n"
	return strings.Repeat(l, n/len(l))
}

var jsonHeader = map[string]string{"Content-Type": "application/json"}

// A pattern whose program is too big is refused at once, 400 in the
// family's shape, saying why.
func TestSearchRefusesCostlyPattern(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/big.txt", slowLines(1500<<10))
	for _, tc := range []struct{ name, target, body string }{
		{"v1 search", "/v1/file/search", `{"file":"/big.txt","regex":"(.*){1,1000}"}`},
		{"v1 grep", "/v1/file/grep", `{"path":"/","pattern":"(.*){1,1000}"}`},
		{"v2 grep", "/v2/fs/grep", `{"path":"/big.txt","pattern":"(.*){1,1000}"}`},
		{"v1 search, work bound", "/v1/file/search", `{"file":"/big.txt","regex":"(.*){1,300}"}`},
		{"v2 grep, long glob", "/v2/fs/grep", `{"path":"/","pattern":"x","include":["` + strings.Repeat("*a", 600) + `"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			r := h.do(t, req{Method: "POST", Target: tc.target, Body: strings.NewReader(tc.body), Header: jsonHeader})
			if d := time.Since(start); d > time.Second {
				t.Errorf("answer took %v, want a quick refusal", d)
			}
			wantAIOError(t, r, 400, "invalid_request")
			msg := string(r.Body)
			if !strings.Contains(msg, "pattern too complex") {
				t.Errorf("body %.300s: want it to say the pattern is too complex", msg)
			}
			switch {
			case strings.Contains(tc.body, "1000"):
				if !strings.Contains(msg, "compiles to 5001 instructions, more than the limit of 2000") {
					t.Errorf("body %.300s: want the program size and the limit", msg)
				}
			case strings.Contains(tc.body, "300"):
				if !strings.Contains(msg, "may search at most 715350 bytes of one file") {
					t.Errorf("body %.300s: want the work bound", msg)
				}
			}
		})
	}
}

// A search or grep whose client hangs up stops: its handler returns soon
// after, where it used to run its regex to the end of the data.
func TestSearchStopsWhenClientHangsUp(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/one.txt", slowLines(2<<20))
	for i := range 4 {
		h.writeFile(t, "/tree/f"+string(rune('a'+i))+".txt", slowLines(2<<20))
	}
	for _, tc := range []struct{ name, target, body string }{
		{"v1 search", "/v1/file/search", `{"file":"/one.txt","regex":"(.*){1,100}"}`},
		{"v2 grep tree", "/v2/fs/grep", `{"path":"/tree","pattern":"(.*){1,100}","max_results":10000,"offset":100000000,"max_file_size":"4M"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for len(h.served) > 0 {
				<-h.served
			}
			c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			hr, err := http.NewRequestWithContext(c, "POST", h.ts.URL+tc.target, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			hr.Header.Set("Content-Type", "application/json")
			res, err := h.ts.Client().Do(hr)
			if err == nil {
				res.Body.Close()
				t.Fatalf("the request finished (%d) before the client hung up: the test needs a slower search", res.StatusCode)
			}
			hungUp := time.Now()
			select {
			case <-h.served:
				t.Logf("handler returned %v after the client hung up", time.Since(hungUp))
			case <-time.After(2 * time.Second):
				t.Fatal("the handler was still running 2 s after its client hung up")
			}
		})
	}
}

func TestGrepRoutes(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	h.writeFile(t, "/p/a.go", "package a\n// TODO one\nfunc main() {}\n")
	h.writeFile(t, "/p/b.py", "x = 1\n# TODO two\n")
	h.writeFile(t, "/p/c.bin", "TODO\x00bin")
	h.writeFile(t, "/p/big.txt", strings.Repeat("TODO big\n", 200_000)) // 1.8 MB: over the 1M default
	h.writeFile(t, "/p/.git/HEAD", "TODO in git\n")

	type match struct {
		File          string    `json:"file"`
		LineNumber    int       `json:"line_number"`
		LineContent   string    `json:"line_content"`
		ContextBefore *[]string `json:"context_before"`
		ContextAfter  *[]string `json:"context_after"`
	}
	type result struct {
		Path          string  `json:"path"`
		Pattern       string  `json:"pattern"`
		Matches       []match `json:"matches"`
		MatchCount    int     `json:"match_count"`
		FilesSearched int     `json:"files_searched"`
		FilesMatched  int     `json:"files_matched"`
		Truncated     bool    `json:"truncated"`
	}
	for _, route := range []string{"/v2/fs/grep", "/v1/file/grep"} {
		t.Run(route, func(t *testing.T) {
			do := func(body string) resp {
				t.Helper()
				r := h.do(t, jsonReq("POST", route, body))
				if strings.HasPrefix(route, "/v1/") && r.Status == 200 && !checkV1Schema(t, route, r) {
					t.Errorf("%s: not checked against the 1.x schema", route)
				}
				return r
			}
			ok := func(body string) result {
				t.Helper()
				return wantAIO[result](t, do(body))
			}
			r := ok(`{"path":"/p","pattern":"TODO"}`)
			want := result{Path: "/p", Pattern: "TODO", MatchCount: 2, FilesSearched: 2, FilesMatched: 2, Matches: []match{
				{File: "/p/a.go", LineNumber: 2, LineContent: "// TODO one"},
				{File: "/p/b.py", LineNumber: 2, LineContent: "# TODO two"},
			}}
			if !reflect.DeepEqual(r, want) {
				t.Errorf("got %+v\nwant %+v", r, want)
			}
			// A single file, with context; null fields take their defaults.
			r = ok(`{"path":"p/a.go","pattern":"todo","case_insensitive":true,"context_before":1,"context_after":5,"max_results":null,"type":null}`)
			if len(r.Matches) != 1 || r.Path != "/p/a.go" {
				t.Fatalf("single file: %+v", r)
			}
			if m := r.Matches[0]; *m.ContextBefore != nil && !reflect.DeepEqual(*m.ContextBefore, []string{"package a"}) ||
				!reflect.DeepEqual(*m.ContextAfter, []string{"func main() {}"}) {
				t.Errorf("context: %q %q", *m.ContextBefore, *m.ContextAfter)
			}
			// max_file_size lets the big file in; max_results truncates.
			r = ok(`{"path":"/p","pattern":"TODO","max_file_size":"2M","max_results":3,"include":["*.txt"]}`)
			if len(r.Matches) != 3 || !r.Truncated || r.MatchCount != 3 || r.Matches[2].LineNumber != 3 {
				t.Errorf("truncated: %+v", r)
			}
			// type alias; exclude replaces the defaults (.git is searched).
			r = ok(`{"path":"/p","pattern":"TODO","type":"py"}`)
			if len(r.Matches) != 1 || r.Matches[0].File != "/p/b.py" {
				t.Errorf("type py: %+v", r)
			}
			r = ok(`{"path":"/p","pattern":"TODO","exclude":["*.go","*.py","big.txt"]}`)
			if len(r.Matches) != 1 || r.Matches[0].File != "/p/.git/HEAD" {
				t.Errorf("exclude: %+v", r)
			}
			// Failures.
			for _, c := range []struct {
				name, body string
				status     int
				errType    string
			}{
				{"bad regex", `{"path":"/p","pattern":"a(b"}`, 400, "invalid_request"},
				{"unknown type", `{"path":"/p","pattern":"a","type":"klingon"}`, 400, "invalid_request"},
				{"bad max_file_size", `{"path":"/p","pattern":"a","max_file_size":"lots"}`, 400, "invalid_request"},
			} {
				t.Run(c.name, func(t *testing.T) {
					f := wantAIOError(t, do(c.body), c.status, c.errType)
					if f.Errno != nil {
						t.Errorf("errno: got %v, want null", *f.Errno)
					}
				})
			}
			missing := 404
			if strings.HasPrefix(route, "/v1/") {
				missing = 200
			}
			f := wantAIOError(t, do(`{"path":"/nope","pattern":"a"}`), missing, "not_found")
			wantErrno(t, f, unix.ENOENT, "FileNotFoundError")
			if f.Path != "/nope" || f.Operation != "grep" {
				t.Errorf("failure path/op: %q %q", f.Path, f.Operation)
			}
			wantValidation(t, h.do(t, jsonReq("POST", route, `{"path":"/p"}`)), "body.pattern", "missing")
			wantValidation(t, h.do(t, jsonReq("POST", route, `{"path":"/p","pattern":"x","context_before":21}`)), "body.context_before", "less_than_equal")
			wantValidation(t, h.do(t, jsonReq("POST", route, `{"path":"/p","pattern":"x","max_results":0}`)), "body.max_results", "greater_than_equal")
			wantValidation(t, h.do(t, jsonReq("POST", route, `{"path":`)), "body", "json_invalid")
		})
	}

	t.Run("/v1/file/search", func(t *testing.T) {
		type sr struct {
			File        string   `json:"file"`
			Matches     []string `json:"matches"`
			LineNumbers []int    `json:"line_numbers"`
		}
		search := func(body string) resp {
			t.Helper()
			r := h.do(t, jsonReq("POST", "/v1/file/search", body))
			if r.Status == 200 && !checkV1Schema(t, "/v1/file/search", r) {
				t.Errorf("not checked against the 1.x schema")
			}
			return r
		}
		r := wantAIO[sr](t, search(`{"file":"/p/a.go","regex":"^(package|func)"}`))
		if want := (sr{"/p/a.go", []string{"package a", "func main() {}"}, []int{0, 2}}); !reflect.DeepEqual(r, want) {
			t.Errorf("got %+v, want %+v", r, want)
		}
		r = wantAIO[sr](t, search(`{"file":"/p/c.bin","regex":"TODO"}`))
		if len(r.Matches) != 1 {
			t.Errorf("a file named directly is searched even when binary: %+v", r)
		}
		wantAIOError(t, h.do(t, jsonReq("POST", "/v1/file/search", `{"file":"/p/a.go","regex":"("}`)), 400, "invalid_request")
		f := wantAIOError(t, search(`{"file":"/p","regex":"x"}`), 200, "invalid_target")
		wantErrno(t, f, unix.EISDIR, "IsADirectoryError")
		wantAIOError(t, search(`{"file":"/zz","regex":"x"}`), 200, "not_found")
		wantValidation(t, h.do(t, jsonReq("POST", "/v1/file/search", `{"file":"/p/a.go"}`)), "body.regex", "missing")
	})
}
