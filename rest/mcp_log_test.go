package rest

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/core/journal"
)

// TestMCPLog: the log tool answers the journal's events as the REST events
// route does, whoever made them (REST with its actor header, an MCP tool
// under its client's name, a process on the mount), one line each, with
// its filters, limit and since, and refuses bad arguments as tool errors.
func TestMCPLog(t *testing.T) {
	h := newNamedHarness(t)
	r := h.do(t, req{Method: "PUT", Target: "/v1/sandboxes/default/fs/write?path=/app/a&mkdir=true", Body: strings.NewReader("x"),
		Header: map[string]string{"X-Sandfs-Actor": "rest-agent"}})
	wantStatus(t, r, 200)
	cs := mustMCP(t, h.ts.URL+"/mcp", "mcp-agent", nil)
	if got, isErr := callText(t, cs, "write_file", map[string]any{"path": "/app/b", "content": "y"}); isErr {
		t.Fatal(got)
	}
	h.def.Journal().Append(journal.Event{Type: journal.Write, Path: "/app/a", Origin: journal.Mirror, Pid: 42, Comm: "vim"})
	latest := h.def.Journal().Seq()

	// line is an event's line without its time, which the test cannot know.
	line := func(seq int, rest string) string {
		return `(?m)^` + regexp.QuoteMeta(itoa(seq)) + ` \d{4}-\d\d-\d\dT[0-9:.]+Z ` + regexp.QuoteMeta(rest) + `$`
	}
	for _, c := range []struct {
		name  string
		args  map[string]any
		want  []string // regexps the text must match, in order
		count int      // events in the structured content
		isErr bool
	}{
		{"all", map[string]any{}, []string{
			line(1, `create "/app" api rest-agent`), line(2, `create "/app/a" api rest-agent`), line(3, `write "/app/a" api rest-agent`),
			`(?m)^\d+ \S+ (create|write) "/app/b" api mcp-agent$`, `(?m)^\d+ \S+ write "/app/a" fuse fuse:vim$`,
			`(?m)^\d+ events; cursor ` + itoa(int(latest)) + `, latest ` + itoa(int(latest)) + `$`}, int(latest), false},
		{"actor", map[string]any{"actor": "mcp-agent"}, []string{`"/app/b" api mcp-agent\n`}, -1, false},
		{"fuse actor", map[string]any{"actor": "fuse:vim"}, []string{`^\d+ \S+ write "/app/a" fuse fuse:vim\n1 events;`}, 1, false},
		{"origin", map[string]any{"origin": "fuse"}, []string{`fuse:vim\n1 events`}, 1, false},
		{"path", map[string]any{"path": "/app/b"}, []string{`^\d+ \S+ \S+ "/app/b" api mcp-agent\n`}, -1, false},
		{"limit", map[string]any{"limit": 2}, []string{line(1, `create "/app" api rest-agent`), line(2, `create "/app/a" api rest-agent`),
			`\n2 events; cursor 2, latest \d+ \(more past these: give since 2\)$`}, 2, false},
		{"since", map[string]any{"since": latest - 1}, []string{`^\d+ \S+ write "/app/a" fuse fuse:vim\n1 events; cursor ` + itoa(int(latest))}, 1, false},
		{"last", map[string]any{"last": 2}, []string{`"/app/b" api mcp-agent\n\d+ \S+ write "/app/a" fuse fuse:vim\n2 events; cursor ` + itoa(int(latest)) + `, latest`}, 2, false},
		{"last past the oldest", map[string]any{"last": 1000}, []string{line(1, `create "/app" api rest-agent`)}, int(latest), false},
		{"last and since", map[string]any{"last": 2, "since": 1}, []string{`^give since or last, not both$`}, 0, true},
		{"last over", map[string]any{"last": 1001}, []string{`^last must be between 1 and 1000, got 1001$`}, 0, true},
		{"since latest", map[string]any{"since": latest}, []string{`^0 events; cursor ` + itoa(int(latest))}, 0, false},
		{"limit zero is the default", map[string]any{"limit": 0}, []string{`events; cursor`}, int(latest), false},
		{"limit over", map[string]any{"limit": 1001}, []string{`^limit must be between 1 and 1000, got 1001$`}, 0, true},
		{"limit negative", map[string]any{"limit": -1}, []string{`^limit must be between 1 and 1000, got -1$`}, 0, true},
		{"since negative", map[string]any{"since": -3}, []string{`^since must be 0 or more, got -3$`}, 0, true},
		{"since not a number", map[string]any{"since": "yesterday"}, []string{`since`}, 0, true},
		{"bad origin", map[string]any{"origin": "mars"}, []string{`^origin must be api, fuse or external, got "mars"$`}, 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "log", Arguments: c.args})
			if err != nil {
				t.Fatal(err)
			}
			got := res.Content[0].(*sdk.TextContent).Text
			if res.IsError != c.isErr {
				t.Fatalf("isError = %v, want %v (text %q)", res.IsError, c.isErr, got)
			}
			rest := got
			for _, w := range c.want {
				loc := regexp.MustCompile(w).FindStringIndex(rest)
				if loc == nil {
					t.Fatalf("text:\n%s\nwant to match %q (in order)", got, w)
				}
				rest = rest[loc[1]:]
			}
			if c.isErr || c.count < 0 {
				return
			}
			b, _ := json.Marshal(res.StructuredContent)
			var out struct {
				Events []journal.Fields
				Latest uint64
			}
			if err := json.Unmarshal(b, &out); err != nil {
				t.Fatal(err)
			}
			if len(out.Events) != c.count || out.Latest != latest {
				t.Fatalf("structured: %d events (latest %d), want %d (latest %d): %s", len(out.Events), out.Latest, c.count, latest, b)
			}
			for _, e := range out.Events {
				if e.Origin == "api" && e.Actor == "" || e.Timestamp == "" {
					t.Errorf("event without its actor or time: %+v", e)
				}
			}
		})
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
