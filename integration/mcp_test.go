package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/internal/testenv"
)

// mcpDir holds the pinned reference MCP filesystem server
// (@modelcontextprotocol/server-filesystem, package.json and
// package-lock.json) and its setup.sh (run by CI; tests never download).
const mcpDir = "testdata/mcp"

// mcpFixture is the tree both servers serve. Sizes differ from file to
// file so that sortBy size has one order.
var mcpFixture = map[string]string{
	"a.txt":           "one\ntwo\nthree\n",
	"notes/readme.md": "# Notes\n\nfirst\nsecond\nthird\nfourth\n",
	"src/main.go":     "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n",
	"src/util.go":     "package main\n\n// util\n",
	"img.png":         "\x89PNG\r\n\x1a\nnot really a png",
	"data.bin":        "\x00\x01\x02binary data here, long enough to differ in size",
	"Zeta.txt":        "capital",
	"_under.txt":      "under score",
	"crlf.txt":        "one\r\ntwo\r\nthree\r\n",
	"no-eol.txt":      "alpha\nbeta",
	"sp ace#1.bin":    "odd name",
}

// mcpCase is one call made to both servers with the same arguments (each
// path as the server names it). canon, when set, turns both answers into
// the form they are compared in; textDiffers says why only isError is
// compared.
type mcpCase struct {
	name, tool  string
	args        map[string]any
	canon       func(string) string
	textDiffers string
}

// TestMCPSideBySide runs the reference filesystem server (node, stdio) on
// a copy of the fixture and sandfs's /mcp on the fixture, calls the 14
// tools with the same arguments on both, and compares the answers (the
// content blocks as JSON, and isError) after the normalisations
// docs/mcp.md lists: the reference's host paths read as sandbox paths,
// listings in name order, times masked.
func TestMCPSideBySide(t *testing.T) {
	node, dir := requireNode(t, mcpDir, "@modelcontextprotocol/server-filesystem", "SANDFS_REQUIRE_SDK", "the MCP reference server comparison")
	const token = "mcp-side-by-side-token"
	d := startDaemon(t, "--token", token)
	refRoot, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{d.Root, refRoot} {
		testenv.Mk(t, root, mcpFixture)
		os.Mkdir(filepath.Join(root, "empty"), 0o755)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	refCmd := exec.Command(node, filepath.Join(dir, "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"), refRoot)
	ref, err := sdk.NewClient(&sdk.Implementation{Name: "side-by-side", Version: "1"}, nil).Connect(ctx, &sdk.CommandTransport{Command: refCmd}, nil)
	if err != nil {
		t.Fatalf("starting the reference server: %v", err)
	}
	defer ref.Close()
	httpc := &http.Client{Transport: bearerRT(token)}
	ours, err := sdk.NewClient(&sdk.Implementation{Name: "side-by-side", Version: "1"}, nil).Connect(ctx,
		&sdk.StreamableClientTransport{Endpoint: d.URL + "/mcp", HTTPClient: httpc, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connecting to sandfs: %v\n%s", err, d.Log())
	}
	defer ours.Close()

	compared := map[string]bool{}
	for _, c := range mcpCases() {
		t.Run(c.name, func(t *testing.T) {
			compared[c.tool] = true
			want, wantErr := mcpCall(t, ctx, ref, c.tool, hostArgs(c.args, refRoot))
			got, gotErr := mcpCall(t, ctx, ours, c.tool, c.args)
			want = strings.ReplaceAll(want, refRoot+"/", "/")
			want = strings.ReplaceAll(want, refRoot, "/")
			if c.canon != nil {
				want, got = c.canon(want), c.canon(got)
			}
			if gotErr != wantErr {
				t.Fatalf("isError: sandfs %v, reference %v\nsandfs:    %s\nreference: %s", gotErr, wantErr, got, want)
			}
			if c.textDiffers == "" && got != want {
				t.Errorf("answers differ\nsandfs:    %s\nreference: %s", got, want)
			}
		})
	}
	if len(compared) != 14 {
		t.Errorf("compared %d tools, want the reference's 14", len(compared))
	}
}

// TestMCPTypeScriptClient drives sandfs's /mcp with the TypeScript SDK's
// client (ts_client_check.mjs), the one most MCP hosts build on: it speaks
// the 2025-11-25 protocol with initialize, opens the GET stream (405 here)
// and keeps no session. Its writes land on disk, attributed to the actor
// its header names.
func TestMCPTypeScriptClient(t *testing.T) {
	node, dir := requireNode(t, mcpDir, "@modelcontextprotocol/sdk", "SANDFS_REQUIRE_SDK", "the MCP TypeScript client check")
	const token = "mcp-ts-client-token"
	d := startDaemon(t, "--token", token)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "ts_client_check.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SANDFS_MCP_URL="+d.URL+"/mcp", "SANDFS_TOKEN="+token)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node ts_client_check.mjs: %v\n%s\n--- daemon log ---\n%s", err, out, d.Log())
	}
	t.Logf("node ts_client_check.mjs:\n%s", out)
	if !strings.Contains(string(out), `"step":"tools","value":["changes_since","checkpoint","copy","create_directory","delete",`) {
		t.Errorf("the tool list is not the 22 tools")
	}
	if b, err := os.ReadFile(filepath.Join(d.Root, "ts/hello.txt")); err != nil || string(b) != "hello\nsandfs\n" {
		t.Errorf("ts/hello.txt: %q, %v", b, err)
	}
	res, err := (&http.Client{Transport: bearerRT(token)}).Get(d.URL + "/v1/sandboxes/default/events?path=/ts/hello.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var evs struct {
		Events []struct{ Origin, Actor string }
	}
	if err := json.NewDecoder(res.Body).Decode(&evs); err != nil || len(evs.Events) == 0 {
		t.Fatalf("events of /ts/hello.txt: %v %+v", err, evs)
	}
	for _, e := range evs.Events {
		if e.Origin != "api" || e.Actor != "ts-sdk" {
			t.Errorf("event %+v: want origin api, actor ts-sdk", e)
		}
	}
}

// mcpCases: the read-only calls first, then the writes, which both trees
// take in the same order.
func mcpCases() []mcpCase {
	edit := func(old, new string) []map[string]any { return []map[string]any{{"oldText": old, "newText": new}} }
	return []mcpCase{
		{name: "allowed", tool: "list_allowed_directories", args: map[string]any{}},
		{name: "read", tool: "read_text_file", args: map[string]any{"path": "/notes/readme.md"}},
		{name: "read deprecated", tool: "read_file", args: map[string]any{"path": "/src/main.go"}},
		{name: "head", tool: "read_text_file", args: map[string]any{"path": "/notes/readme.md", "head": 3}},
		{name: "tail", tool: "read_text_file", args: map[string]any{"path": "/notes/readme.md", "tail": 2}},
		{name: "head past the end", tool: "read_text_file", args: map[string]any{"path": "/a.txt", "head": 10}},
		{name: "tail crlf", tool: "read_text_file", args: map[string]any{"path": "/crlf.txt", "tail": 2}},
		{name: "head crlf", tool: "read_text_file", args: map[string]any{"path": "/crlf.txt", "head": 2}},
		{name: "head no eol", tool: "read_text_file", args: map[string]any{"path": "/no-eol.txt", "head": 5}},
		{name: "tail no eol", tool: "read_text_file", args: map[string]any{"path": "/no-eol.txt", "tail": 1}},
		{name: "head and tail", tool: "read_text_file", args: map[string]any{"path": "/a.txt", "head": 1, "tail": 1}},
		{name: "read missing", tool: "read_text_file", args: map[string]any{"path": "/nope.txt"}},
		{name: "read a directory", tool: "read_text_file", args: map[string]any{"path": "/src"}},
		{name: "read outside", tool: "read_text_file", args: map[string]any{"path": "/../../etc/hostname"},
			textDiffers: "the reference refuses a path outside its directory; sandfs reads it as the sandbox's /etc/hostname, which is absent"},
		{name: "media image", tool: "read_media_file", args: map[string]any{"path": "/img.png"}},
		{name: "media other", tool: "read_media_file", args: map[string]any{"path": "/data.bin"}},
		{name: "media odd name", tool: "read_media_file", args: map[string]any{"path": "/sp ace#1.bin"}},
		{name: "missing argument", tool: "read_text_file", args: map[string]any{},
			textDiffers: "argument validation is each SDK's: zod's message in the reference, the Go SDK's JSON Schema validation in sandfs"},
		{name: "multiple", tool: "read_multiple_files", args: map[string]any{"paths": []any{"/a.txt", "/nope", "/src/util.go"}}},
		{name: "list", tool: "list_directory", args: map[string]any{"path": "/"}, canon: sortLines},
		{name: "list missing", tool: "list_directory", args: map[string]any{"path": "/nope"}},
		{name: "list a file", tool: "list_directory", args: map[string]any{"path": "/a.txt"}},
		{name: "sizes by name", tool: "list_directory_with_sizes", args: map[string]any{"path": "/"}},
		{name: "sizes by size", tool: "list_directory_with_sizes", args: map[string]any{"path": "/src", "sortBy": "size"}},
		{name: "tree", tool: "directory_tree", args: map[string]any{"path": "/", "excludePatterns": []any{"*.png", "util.go"}}, canon: sortTree},
		{name: "tree missing", tool: "directory_tree", args: map[string]any{"path": "/nope"}},
		{name: "search deep", tool: "search_files", args: map[string]any{"path": "/", "pattern": "**/*.go"}, canon: sortLines},
		{name: "search top", tool: "search_files", args: map[string]any{"path": "/", "pattern": "*.txt"}, canon: sortLines},
		{name: "search none", tool: "search_files", args: map[string]any{"path": "/", "pattern": "*.rs"}},
		{name: "search exclude", tool: "search_files", args: map[string]any{"path": "/src", "pattern": "*.go", "excludePatterns": []any{"util*"}}},
		{name: "info file", tool: "get_file_info", args: map[string]any{"path": "/a.txt"}, canon: maskTimes},
		{name: "info dir", tool: "get_file_info", args: map[string]any{"path": "/src"}, canon: maskTimes},
		{name: "info missing", tool: "get_file_info", args: map[string]any{"path": "/nope"}},
		{name: "mkdir", tool: "create_directory", args: map[string]any{"path": "/new/deep"}},
		{name: "mkdir again", tool: "create_directory", args: map[string]any{"path": "/new/deep"}},
		{name: "mkdir over a file", tool: "create_directory", args: map[string]any{"path": "/a.txt"}},
		{name: "search in a file", tool: "search_files", args: map[string]any{"path": "/a.txt", "pattern": "*"}},
		{name: "edit crlf", tool: "edit_file", args: map[string]any{"path": "/crlf.txt", "edits": edit("two", "2")}},
		{name: "after crlf edit", tool: "read_text_file", args: map[string]any{"path": "/crlf.txt"}},
		{name: "edit many", tool: "edit_file", args: map[string]any{"path": "/notes/readme.md", "edits": []map[string]any{{"oldText": "first", "newText": "1st"}, {"oldText": "fourth\n", "newText": "fourth\nfifth\n"}}}},
		{name: "write", tool: "write_file", args: map[string]any{"path": "/new/deep/w.txt", "content": "written\n"}},
		{name: "write over", tool: "write_file", args: map[string]any{"path": "/a.txt", "content": "one\ntwo\nthree\nfour\n"}},
		{name: "write no parent", tool: "write_file", args: map[string]any{"path": "/no/such/w.txt", "content": "x"}},
		{name: "edit dry", tool: "edit_file", args: map[string]any{"path": "/a.txt", "edits": edit("two", "2"), "dryRun": true}},
		{name: "edit", tool: "edit_file", args: map[string]any{"path": "/src/main.go", "edits": edit("println(\"hi\")", "println(\"bye\")")}},
		{name: "edit loose", tool: "edit_file", args: map[string]any{"path": "/src/main.go", "edits": edit("func main() {\n  println(\"bye\")\n}", "func main() {\n  println(\"ok\")\n  return\n}")}},
		{name: "edit no match", tool: "edit_file", args: map[string]any{"path": "/a.txt", "edits": edit("zzz", "y")}},
		{name: "after edits", tool: "read_text_file", args: map[string]any{"path": "/src/main.go"}},
		{name: "move", tool: "move_file", args: map[string]any{"source": "/src/util.go", "destination": "/util.go"}},
		{name: "move onto", tool: "move_file", args: map[string]any{"source": "/util.go", "destination": "/a.txt"}},
		{name: "move missing", tool: "move_file", args: map[string]any{"source": "/nope", "destination": "/nope2"}},
	}
}

// hostArgs are args with each path under root, as the reference names it.
func hostArgs(args map[string]any, root string) map[string]any {
	out := map[string]any{}
	for k, v := range args {
		switch k {
		case "path", "source", "destination":
			out[k] = root + v.(string)
		case "paths":
			var ps []any
			for _, p := range v.([]any) {
				ps = append(ps, root+p.(string))
			}
			out[k] = ps
		default:
			out[k] = v
		}
	}
	return out
}

// mcpCall answers a call's content blocks as JSON, and isError.
func mcpCall(t *testing.T, ctx context.Context, cs *sdk.ClientSession, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) == 1 {
		if tc, ok := res.Content[0].(*sdk.TextContent); ok {
			return tc.Text, res.IsError
		}
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), res.IsError
}

func sortLines(s string) string {
	lines := strings.Split(s, "\n")
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

var timeLine = regexp.MustCompile(`(?m)^(created|modified|accessed): .*$`)

func maskTimes(s string) string { return timeLine.ReplaceAllString(s, "$1: TIME") }

// sortTree orders each directory's entries by name.
func sortTree(s string) string {
	var tree []any
	if err := json.Unmarshal([]byte(s), &tree); err != nil {
		return s
	}
	var sortAll func([]any)
	sortAll = func(es []any) {
		slices.SortFunc(es, func(a, b any) int {
			return strings.Compare(a.(map[string]any)["name"].(string), b.(map[string]any)["name"].(string))
		})
		for _, e := range es {
			if kids, ok := e.(map[string]any)["children"].([]any); ok {
				sortAll(kids)
			}
		}
	}
	sortAll(tree)
	b, _ := json.MarshalIndent(tree, "", "  ")
	return string(b)
}

type bearerRT string

func (tok bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(tok))
	return http.DefaultTransport.RoundTrip(r)
}
