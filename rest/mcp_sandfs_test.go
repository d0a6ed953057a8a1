package rest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"sandfs/core"
)

// TestMCPSandfsTools: sandfs's own tools (delete, copy, grep, the history
// tools) and the expected_etag of the write tools, through the SDK's
// client: each answer's text for a success and a failure, and what is on
// disk after.
func TestMCPSandfsTools(t *testing.T) {
	h := newHarness(t, harnessOpts{State: true})
	h.writeFile(t, "/a.txt", "alpha\nbeta\n")
	h.writeFile(t, "/src/main.go", "package main\n\nfunc main() {\n\tprintln(\"hi\")\n}\n")
	h.writeFile(t, "/d/x", "x")
	cs := mustMCP(t, h.ts.URL+"/mcp", "sandfs-test", nil)
	sb := h.srv.sandboxOf(context.Background())
	etag := func(p string) string {
		info, err := sb.Lstat(context.Background(), p)
		if err != nil {
			t.Fatal(err)
		}
		return core.ETag(info)
	}
	stale := `"1-2-3"`
	aTag := etag("/a.txt")

	var cpID string
	for _, c := range []struct {
		name, tool string
		args       func() map[string]any
		want       string // a regexp the text must match
		isErr      bool
	}{
		{"write stale", "write_file", func() map[string]any {
			return map[string]any{"path": "/a.txt", "content": "lost", "expected_etag": stale}
		}, `precondition failed: the current ETag is ` + regexp.QuoteMeta(aTag), true},
		{"edit stale", "edit_file", func() map[string]any {
			return map[string]any{"path": "/a.txt", "expected_etag": stale, "edits": []map[string]any{{"oldText": "beta", "newText": "b"}}}
		}, `precondition failed: the current ETag is ` + regexp.QuoteMeta(aTag), true},
		{"write current", "write_file", func() map[string]any {
			return map[string]any{"path": "/a.txt", "content": "alpha\nbeta\ngamma\n", "expected_etag": aTag}
		}, `^Successfully wrote to /a.txt$`, false},
		{"move stale", "move_file", func() map[string]any {
			return map[string]any{"source": "/a.txt", "destination": "/moved.txt", "expected_etag": stale}
		}, `precondition failed`, true},
		{"checkpoint", "checkpoint", func() map[string]any { return map[string]any{"name": "before"} }, `"id": "cp_[0-9a-f]+"`, false},
		{"list checkpoints", "list_checkpoints", func() map[string]any { return map[string]any{} }, `"count": 1`, false},
		{"grep", "grep", func() map[string]any { return map[string]any{"path": "/", "pattern": "print.n"} },
			`^/src/main.go:4:\tprintln\("hi"\)\n1 matches in 1 of 3 files searched$`, false},
		{"grep context", "grep", func() map[string]any {
			return map[string]any{"path": "/src", "pattern": "hi", "fixed_strings": true, "context_before": 1}
		}, `^/src/main.go-3-func main\(\) \{\n/src/main.go:4:`, false},
		{"grep bad regexp", "grep", func() map[string]any { return map[string]any{"path": "/", "pattern": "("} }, `.`, true},
		{"grep bound", "grep", func() map[string]any { return map[string]any{"path": "/", "pattern": "a", "context_after": 99} },
			`context_after must be between 0 and 20`, true},
		{"copy", "copy", func() map[string]any { return map[string]any{"source": "/a.txt", "destination": "/b.txt"} },
			`^Successfully copied /a.txt to /b.txt \(1 entries, 17 bytes\)\nETag: "[0-9a-f-]+"$`, false},
		{"copy onto", "copy", func() map[string]any { return map[string]any{"source": "/a.txt", "destination": "/b.txt"} }, `^EEXIST`, true},
		{"copy dir", "copy", func() map[string]any { return map[string]any{"source": "/d", "destination": "/e"} }, `^Successfully copied /d to /e \(2 entries`, false},
		{"delete stale", "delete", func() map[string]any { return map[string]any{"path": "/b.txt", "expected_etag": stale} }, `precondition failed`, true},
		{"delete", "delete", func() map[string]any { return map[string]any{"path": "/b.txt", "expected_etag": etag("/b.txt")} }, `^Successfully deleted /b.txt$`, false},
		{"delete missing", "delete", func() map[string]any { return map[string]any{"path": "/b.txt"} }, `^ENOENT: no such file or directory, rm '/b.txt'$`, true},
		{"delete full dir", "delete", func() map[string]any { return map[string]any{"path": "/d"} }, `^ENOTEMPTY`, true},
		{"delete dir", "delete", func() map[string]any { return map[string]any{"path": "/d", "recursive": true} }, `^Successfully deleted /d$`, false},
		{"changes", "changes_since", func() map[string]any { return map[string]any{"since": cpID, "diff": true} },
			`(?s)"path": "/d".*"change": "deleted".*"path": "/e"`, false},
		{"changes bad since", "changes_since", func() map[string]any { return map[string]any{"since": "yesterday"} }, `since must be`, true},
		{"changes since fork of no fork", "changes_since", func() map[string]any { return map[string]any{"since": "fork"} }, `not a fork`, true},
		{"restore dry", "restore", func() map[string]any {
			return map[string]any{"checkpoint": cpID, "paths": []string{"/d"}, "dry_run": true}
		},
			`(?s)"dryRun": true.*"/d/x"`, false},
		{"restore", "restore", func() map[string]any { return map[string]any{"checkpoint": cpID, "paths": []string{"/d"}} },
			`"undo": "cp_[0-9a-f]+"`, false},
		{"restore unknown", "restore", func() map[string]any { return map[string]any{"checkpoint": "cp_000000000000"} }, `.`, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, isErr := callText(t, cs, c.tool, c.args())
			if isErr != c.isErr {
				t.Fatalf("isError = %v, want %v (text %q)", isErr, c.isErr, got)
			}
			if !regexp.MustCompile(c.want).MatchString(got) {
				t.Fatalf("text:\n%s\nwant to match %q", got, c.want)
			}
			if c.tool == "checkpoint" {
				var cp struct{ ID string }
				json.Unmarshal([]byte(got), &cp)
				cpID = cp.ID
			}
		})
	}
	if b, _ := os.ReadFile(filepath.Join(h.root, "a.txt")); string(b) != "alpha\nbeta\ngamma\n" {
		t.Errorf("a.txt: %q", b)
	}
	if b, _ := os.ReadFile(filepath.Join(h.root, "d/x")); string(b) != "x" {
		t.Errorf("d/x after the restore: %q", b)
	}
}

// TestMCPToolList: the 14 reference tools and sandfs's 8, each with the
// annotations a client decides on.
func TestMCPToolList(t *testing.T) {
	h := newHarness(t, harnessOpts{})
	cs := mustMCP(t, h.ts.URL+"/mcp", "list-test", nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*sdk.Tool{}
	for _, tl := range res.Tools {
		got[tl.Name] = tl
	}
	for _, c := range []struct {
		name                            string
		readOnly, destructive, idempote bool
	}{
		{"read_file", true, false, false}, {"read_text_file", true, false, false}, {"read_media_file", true, false, false},
		{"read_multiple_files", true, false, false}, {"write_file", false, true, true}, {"edit_file", false, true, false},
		{"create_directory", false, false, true}, {"list_directory", true, false, false},
		{"list_directory_with_sizes", true, false, false}, {"directory_tree", true, false, false},
		{"move_file", false, true, false}, {"search_files", true, false, false}, {"get_file_info", true, false, false},
		{"list_allowed_directories", true, false, false},
		{"delete", false, true, true}, {"copy", false, true, false}, {"grep", true, false, false},
		{"changes_since", true, false, false}, {"checkpoint", false, false, false}, {"list_checkpoints", true, false, false},
		{"restore", false, true, false}, {"log", true, false, false},
	} {
		tl := got[c.name]
		if tl == nil {
			t.Errorf("no tool %s", c.name)
			continue
		}
		a := tl.Annotations
		destructive := a != nil && a.DestructiveHint != nil && *a.DestructiveHint
		if a == nil || a.ReadOnlyHint != c.readOnly || (!c.readOnly && destructive != c.destructive) || a.IdempotentHint != c.idempote {
			t.Errorf("%s: annotations %+v, want readOnly %v destructive %v idempotent %v", c.name, a, c.readOnly, c.destructive, c.idempote)
		}
		delete(got, c.name)
	}
	for name := range got {
		t.Errorf("tool %s is not in the list", name)
	}
	if strings.Contains(h.logs.String(), "level=ERROR") {
		t.Errorf("server log: %s", h.logs.String())
	}
}

// TestMCPRestoreByActor: restore with an actor brings back only the paths
// that actor changed since the checkpoint; a path another changed after
// it is skipped and named; an actor the header check refuses is a tool
// error that changes nothing.
func TestMCPRestoreByActor(t *testing.T) {
	h := newHarness(t, harnessOpts{State: true})
	h.writeFile(t, "/a.txt", "base\n")
	base := mustMCP(t, h.ts.URL+"/mcp", "setup", nil)
	one := mustMCP(t, h.ts.URL+"/mcp", "agent-1", nil)
	two := mustMCP(t, h.ts.URL+"/mcp", "agent-2", nil)
	text, isErr := callText(t, base, "checkpoint", map[string]any{})
	var cp struct{ ID string }
	if json.Unmarshal([]byte(text), &cp); isErr || cp.ID == "" {
		t.Fatalf("checkpoint: %s", text)
	}
	for _, w := range []struct {
		cs            *sdk.ClientSession
		path, content string
	}{{one, "/one.txt", "1"}, {one, "/a.txt", "by one\n"}, {two, "/two.txt", "2"}, {two, "/a.txt", "by two\n"}} {
		if got, isErr := callText(t, w.cs, "write_file", map[string]any{"path": w.path, "content": w.content}); isErr {
			t.Fatal(got)
		}
	}
	if got, isErr := callText(t, base, "restore", map[string]any{"checkpoint": cp.ID, "actor": "bad\nname"}); !isErr || !strings.Contains(got, "actor") {
		t.Fatalf("bad actor: %q (isError %v)", got, isErr)
	}
	got, isErr := callText(t, base, "restore", map[string]any{"checkpoint": cp.ID, "actor": "agent-1"})
	var res struct {
		Removed []string
		Skipped []struct{ Path, Reason, By string }
	}
	if json.Unmarshal([]byte(got), &res); isErr || strings.Join(res.Removed, " ") != "/one.txt" ||
		len(res.Skipped) != 1 || res.Skipped[0].Path != "/a.txt" || !strings.Contains(res.Skipped[0].By, "agent-2") {
		t.Fatalf("restore by agent-1: %s", got)
	}
	for p, want := range map[string]string{"one.txt": "", "two.txt": "2", "a.txt": "by two\n"} {
		b, err := os.ReadFile(filepath.Join(h.root, p))
		if string(b) != want || (want == "") != os.IsNotExist(err) {
			t.Errorf("%s after the restore: %q, %v; want %q", p, b, err, want)
		}
	}
}
