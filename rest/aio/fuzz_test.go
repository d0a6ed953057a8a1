package aio

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/core/precond"
	"sandfs/rest/httpkit"
	"sandfs/rest/httpkit/httpkittest"
)

// aioDecodeTargets are the request types of the AIO family's JSON routes,
// which decodeAIO reads; a poll's body may be empty.
var aioDecodeTargets = []httpkittest.DecodeTarget{
	{Name: "fileReadRequest", New: func() any { return new(fileReadRequest) }},
	{Name: "fileWriteRequest", New: func() any { return new(fileWriteRequest) }},
	{Name: "editRequest", New: func() any { return new(editRequest) }},
	{Name: "pathRequest", New: func() any { return new(pathRequest) }},
	{Name: "listRequest", New: func() any { return new(listRequest) }},
	{Name: "findRequest", New: func() any { return new(findRequest) }},
	{Name: "globRequest", New: func() any { return new(globRequest) }},
	{Name: "transferRequest", New: func() any { return new(transferRequest) }},
	{Name: "grepRequest", New: func() any { return new(grepRequest) }},
	{Name: "searchRequest", New: func() any { return new(searchRequest) }},
	{Name: "xattrSetRequest", New: func() any { return new(xattrSetRequest) }},
	{Name: "watchCreateRequest", New: func() any { return new(watchCreateRequest) }},
	{Name: "watchPollRequest", New: func() any { return new(watchPollRequest) }, EmptyOK: true},
	{Name: "watchWaitRequest", New: func() any { return new(watchWaitRequest) }},
}

// FuzzAIODecoders fuzzes decodeAIO with every AIO request type
// (httpkittest.FuzzDecode says what must hold).
func FuzzAIODecoders(f *testing.F) { httpkittest.FuzzDecode(f, decodeAIO, aioDecodeTargets) }

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
			res, err = s.editInsert(ctx, "/e.txt", &line, &repl, precond.Precondition{})
		} else {
			res, _, err = s.editReplace(ctx, "/e.txt", old, repl, mode, precond.Precondition{})
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
		if _, err := s.editUndo(ctx, "/e.txt", precond.Precondition{}); err != nil {
			t.Fatalf("undo: %v", err)
		}
		if back := onDisk(); back != content {
			t.Fatalf("undo gave %q, want %q", back, content)
		}
	})
}
