package rest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
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
