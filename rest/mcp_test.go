package rest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMCPRefTools calls each of the reference server's 14 tools through
// the SDK's client over loopback and checks its answer text, for a call
// that succeeds and one that fails.
func TestMCPRefTools(t *testing.T) {
	const token = "mcp-test-token"
	h := newHarness(t, harnessOpts{Token: token})
	h.writeFile(t, "/a.txt", "one\ntwo\nthree\n")
	h.writeFile(t, "/src/main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	h.writeFile(t, "/src/util.go", "package main\n")
	h.writeFile(t, "/img.png", "\x89PNG fake")
	h.mkdir(t, "/empty")
	// A file over the whole-read bound: head and tail still read its ends.
	big := strings.Repeat("x", 1<<20) + "\n"
	h.writeFile(t, "/big.log", "first\nsecond\n"+strings.Repeat(big, 17)+"last-but-one\nlast\n")
	cs := mustMCP(t, h.ts.URL+"/mcp", "ref-test", bearer(token))

	for _, c := range []struct {
		name, tool string
		args       map[string]any
		want       string // exact text, or with a leading "~" a substring
		isErr      bool
	}{
		{"read", "read_text_file", map[string]any{"path": "/a.txt"}, "one\ntwo\nthree\n", false},
		{"read relative", "read_file", map[string]any{"path": "a.txt"}, "one\ntwo\nthree\n", false},
		{"head", "read_text_file", map[string]any{"path": "/a.txt", "head": 2}, "one\ntwo", false},
		{"tail", "read_text_file", map[string]any{"path": "/a.txt", "tail": 2}, "three\n", false},
		{"big whole", "read_text_file", map[string]any{"path": "/big.log"}, "~/big.log is 17825840 bytes; a read answers at most 16777216", true},
		{"big head", "read_text_file", map[string]any{"path": "/big.log", "head": 2}, "first\nsecond", false},
		{"big tail", "read_text_file", map[string]any{"path": "/big.log", "tail": 3}, "last-but-one\nlast\n", false},
		{"head and tail", "read_text_file", map[string]any{"path": "/a.txt", "head": 1, "tail": 1}, "Cannot specify both head and tail parameters simultaneously", true},
		{"read missing", "read_text_file", map[string]any{"path": "/nope.txt"}, "ENOENT: no such file or directory, open '/nope.txt'", true},
		{"read dir", "read_text_file", map[string]any{"path": "/src"}, "EISDIR: illegal operation on a directory, read", true},
		{"escape", "read_text_file", map[string]any{"path": "/../../etc/hostname"}, "ENOENT: no such file or directory, open '/etc/hostname'", true},
		{"multiple", "read_multiple_files", map[string]any{"paths": []string{"/src/util.go", "/nope"}},
			"/src/util.go:\npackage main\n\n\n---\n/nope: Error - ENOENT: no such file or directory, open '/nope'", false},
		{"list", "list_directory", map[string]any{"path": "/"}, "[FILE] a.txt\n[FILE] big.log\n[DIR] empty\n[FILE] img.png\n[DIR] src", false},
		{"list missing", "list_directory", map[string]any{"path": "/nope"}, "ENOENT: no such file or directory, scandir '/nope'", true},
		{"sizes", "list_directory_with_sizes", map[string]any{"path": "/src", "sortBy": "size"},
			"[FILE] main.go" + strings.Repeat(" ", 30) + "45 B\n[FILE] util.go" + strings.Repeat(" ", 30) + "13 B\n\nTotal: 2 files, 0 directories\nCombined size: 58 B", false},
		{"tree", "directory_tree", map[string]any{"path": "/", "excludePatterns": []string{"*.png", "a.txt", "*.log"}},
			"[\n  {\n    \"name\": \"empty\",\n    \"type\": \"directory\",\n    \"children\": []\n  },\n  {\n    \"name\": \"src\",\n    \"type\": \"directory\",\n    \"children\": [\n      {\n        \"name\": \"main.go\",\n        \"type\": \"file\"\n      },\n      {\n        \"name\": \"util.go\",\n        \"type\": \"file\"\n      }\n    ]\n  }\n]", false},
		{"search", "search_files", map[string]any{"path": "/", "pattern": "**/*.go"}, "/src/main.go\n/src/util.go", false},
		{"search top", "search_files", map[string]any{"path": "/", "pattern": "*.go"}, "No matches found", false},
		{"search exclude", "search_files", map[string]any{"path": "/src", "pattern": "*.go", "excludePatterns": []string{"main*"}}, "/src/util.go", false},
		{"info", "get_file_info", map[string]any{"path": "/a.txt"}, "~size: 14\ncreated: ", false},
		{"info missing", "get_file_info", map[string]any{"path": "/nope"}, "ENOENT: no such file or directory, stat '/nope'", true},
		{"allowed", "list_allowed_directories", map[string]any{}, "Allowed directories:\n/", false},
		{"media", "read_media_file", map[string]any{"path": "/img.png"}, "", false},
		{"mkdir", "create_directory", map[string]any{"path": "/new/deep"}, "Successfully created directory /new/deep", false},
		{"mkdir over file", "create_directory", map[string]any{"path": "/a.txt"}, "~EEXIST", true},
		{"write", "write_file", map[string]any{"path": "/new/deep/w.txt", "content": "x\ny\n"}, "Successfully wrote to /new/deep/w.txt", false},
		{"write no parent", "write_file", map[string]any{"path": "/no/w.txt", "content": "x"}, "ENOENT: no such file or directory, open '/no/w.txt'", true},
		{"edit dry", "edit_file", map[string]any{"path": "/a.txt", "dryRun": true, "edits": []map[string]any{{"oldText": "two", "newText": "2"}}},
			"```diff\nIndex: /a.txt\n===================================================================\n--- /a.txt\toriginal\n+++ /a.txt\tmodified\n@@ -1,3 +1,3 @@\n one\n-two\n+2\n three\n```\n\n", false},
		{"edit nomatch", "edit_file", map[string]any{"path": "/a.txt", "edits": []map[string]any{{"oldText": "four", "newText": "4"}}}, "Could not find exact match for edit:\nfour", true},
		{"edit loose", "edit_file", map[string]any{"path": "/src/main.go", "edits": []map[string]any{{"oldText": "println(\"hi\")", "newText": "println(\"bye\")"}}}, "~+\tprintln(\"bye\")", false},
		{"move", "move_file", map[string]any{"source": "/src/util.go", "destination": "/util.go"}, "Successfully moved /src/util.go to /util.go", false},
		{"move onto", "move_file", map[string]any{"source": "/util.go", "destination": "/a.txt"}, "Destination already exists: /a.txt", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, isErr := callText(t, cs, c.tool, c.args)
			if isErr != c.isErr {
				t.Fatalf("isError = %v, want %v (text %q)", isErr, c.isErr, got)
			}
			if want, ok := strings.CutPrefix(c.want, "~"); ok {
				if !strings.Contains(got, want) {
					t.Fatalf("text %q does not hold %q", got, want)
				}
			} else if got != c.want {
				t.Fatalf("text:\n%q\nwant:\n%q", got, c.want)
			}
		})
	}
	b, err := os.ReadFile(filepath.Join(h.root, "a.txt"))
	if err != nil || string(b) != "one\ntwo\nthree\n" {
		t.Errorf("a.txt after a dry run and a failed edit: %q, %v", b, err)
	}
	if b, _ := os.ReadFile(filepath.Join(h.root, "src/main.go")); !strings.Contains(string(b), "\tprintln(\"bye\")") {
		t.Errorf("main.go after the edit: %q", b)
	}
}
