package rest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPReadRange: read_text_file's offset and length read a byte range
// of a file over the whole-read bound (16 MiB), with where the next range
// starts and the file's size; neither goes with head or tail.
func TestMCPReadRange(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	const size = 17<<20 + 10
	// Each byte tells its place: byte i is 'a'+i%26, but for a marker at
	// 16 MiB and the file's last five bytes.
	b := make([]byte, size)
	for i := range b {
		b[i] = byte('a' + i%26)
	}
	copy(b[16<<20:], "MARK")
	copy(b[size-5:], "TAIL\n")
	h.writeFile(t, "/big.log", string(b))
	h.writeFile(t, "/u.txt", "héllo") // é is two bytes, 0xc3 0xa9
	cs := mustMCP(t, h.ts.URL+"/mcp", "read-test", nil)

	for _, c := range []struct {
		name       string
		args       map[string]any
		want       string // the whole text, or with prefix its start
		prefix     bool
		next, size int64 // the structured answer's, 0: not checked
		isErr      bool
	}{
		{"whole is refused", map[string]any{"path": "/big.log"}, "/big.log is 17825802 bytes; a read answers at most 16777216", true, 0, 0, true},
		{"range past the bound", map[string]any{"path": "/big.log", "offset": 16 << 20, "length": 6}, "MARKst", false, 16<<20 + 6, size, false},
		{"offset alone: the rest", map[string]any{"path": "/big.log", "offset": size - 10}, string(b[size-10:]), false, size, size, false},
		{"length alone: from 0", map[string]any{"path": "/big.log", "length": 3}, "abc", false, 3, size, false},
		{"past the end", map[string]any{"path": "/big.log", "offset": size + 100, "length": 10}, "", false, size + 100, size, false},
		{"cut inside a character", map[string]any{"path": "/u.txt", "offset": 2, "length": 3}, "\ufffdll", false, 5, 6, false},
		{"read_file too", map[string]any{"path": "/u.txt", "offset": 1, "length": 3}, "él", false, 4, 6, false},
		{"with head", map[string]any{"path": "/big.log", "offset": 0, "head": 2}, "Cannot specify head or tail together with offset or length", false, 0, 0, true},
		{"with tail", map[string]any{"path": "/big.log", "length": 5, "tail": 1}, "Cannot specify head or tail together with offset or length", false, 0, 0, true},
		{"negative offset", map[string]any{"path": "/big.log", "offset": -1}, "offset must be 0 or more, got -1", false, 0, 0, true},
		{"length zero", map[string]any{"path": "/big.log", "length": 0}, "length must be between 1 and 16777216, got 0", false, 0, 0, true},
		{"length over", map[string]any{"path": "/big.log", "length": 16<<20 + 1}, "length must be between 1 and 16777216, got 16777217", false, 0, 0, true},
		{"missing", map[string]any{"path": "/nope", "offset": 0}, "ENOENT: no such file or directory, open '/nope'", false, 0, 0, true},
		{"tail still reads the end", map[string]any{"path": "/big.log", "tail": 1}, "", false, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			tool := "read_text_file"
			if c.name == "read_file too" {
				tool = "read_file"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: c.args})
			if err != nil {
				t.Fatal(err)
			}
			got := res.Content[0].(*sdk.TextContent).Text
			if res.IsError != c.isErr {
				t.Fatalf("isError = %v, want %v (text %.200q)", res.IsError, c.isErr, got)
			}
			if c.prefix && !strings.HasPrefix(got, c.want) || !c.prefix && got != c.want {
				t.Fatalf("text %.200q, want %.200q (prefix %v)", got, c.want, c.prefix)
			}
			if c.next == 0 {
				return
			}
			var out struct{ Next, Size int64 }
			bs, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(bs, &out); err != nil || out.Next != c.next || out.Size != c.size {
				t.Fatalf("structured %s, want next %d size %d", bs, c.next, c.size)
			}
		})
	}
}
