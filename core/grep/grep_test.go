package grep

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/pathmatch"
)

// lines renders matches as "file:line:text" for comparison.
func lines(ms []Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%s:%d:%s", m.File, m.Line, m.Text)
	}
	return out
}

func TestGrep(t *testing.T) {
	modes(t, func(t *testing.T, s *core.Sandbox, root string) {
		mk(t, root, map[string]string{
			"src/a.go":                 "package a\nfunc Argv() {}\n// argv here\n",
			"src/b.py":                 "import sys\nprint(sys.argv)\n",
			"src/sub/c.go":             "x := argv\r\ny := 1\n",
			"src/.git/config":          "argv in git\n",
			"src/node_modules/m.js":    "argv in node\n",
			"src/bin.dat":              "argv\x00binary\n",
			"src/link.go":              "->a.go",
			"src/.hidden.txt":          "argv hidden\n",
			"ctx.txt":                  "one\ntwo\nthree MATCH\nfour\nfive\n",
			"multi.txt":                "begin\nmiddle\nend\n",
			"nonl.txt":                 "last line argv",
			"src/sub/deeper/z.ts":      "const argv = 1\n",
			"src/sub/deeper/zz.min.js": "argv\n",
		})
		cases := []struct {
			name string
			path string
			o    Options
			want []string
			tr   bool
		}{
			{"literal, default excludes, binary and symlink skipped", "/src", Options{Pattern: "argv"}, []string{
				"/src/.hidden.txt:1:argv hidden",
				"/src/a.go:3:// argv here",
				"/src/b.py:2:print(sys.argv)",
				"/src/sub/c.go:1:x := argv",
				"/src/sub/deeper/z.ts:1:const argv = 1",
				"/src/sub/deeper/zz.min.js:1:argv",
			}, false},
			{"case insensitive", "/src/a.go", Options{Pattern: "ARGV", CaseInsensitive: true}, []string{"/src/a.go:2:func Argv() {}", "/src/a.go:3:// argv here"}, false},
			{"regex", "/src", Options{Pattern: `^x :=|sys\.\w+\)`, Type: "go,py"}, []string{"/src/b.py:2:print(sys.argv)", "/src/sub/c.go:1:x := argv"}, false},
			{"fixed strings keep metacharacters", "/src/b.py", Options{Pattern: "sys.argv)", FixedStrings: true}, []string{"/src/b.py:2:print(sys.argv)"}, false},
			{"type alias", "/src", Options{Pattern: "argv", Type: "ts"}, []string{"/src/sub/deeper/z.ts:1:const argv = 1"}, false},
			{"include glob", "/src", Options{Pattern: "argv", Include: []string{"*.py"}}, []string{"/src/b.py:2:print(sys.argv)"}, false},
			{"exclude replaces the defaults", "/src", Options{Pattern: "argv", Exclude: []string{"sub", ".*", "*.py"}}, []string{
				"/src/a.go:3:// argv here", "/src/node_modules/m.js:1:argv in node",
			}, false},
			{"not recursive", "/src", Options{Pattern: "argv", NoRecurse: true}, []string{
				"/src/.hidden.txt:1:argv hidden", "/src/a.go:3:// argv here", "/src/b.py:2:print(sys.argv)",
			}, false},
			{"max results truncates", "/src", Options{Pattern: "argv", MaxResults: 2}, []string{
				"/src/.hidden.txt:1:argv hidden", "/src/a.go:3:// argv here",
			}, true},
			{"offset pages", "/src", Options{Pattern: "argv", MaxResults: 2, Offset: 2}, []string{
				"/src/b.py:2:print(sys.argv)", "/src/sub/c.go:1:x := argv",
			}, true},
			{"offset past the end", "/src", Options{Pattern: "argv", Offset: 50}, nil, false},
			{"exactly max results is not truncated", "/src/a.go", Options{Pattern: "rgv", MaxResults: 2, CaseInsensitive: true}, []string{"/src/a.go:2:func Argv() {}", "/src/a.go:3:// argv here"}, false},
			{"file without final newline", "/nonl.txt", Options{Pattern: "argv$"}, []string{"/nonl.txt:1:last line argv"}, false},
			{"a match crossing a newline is not one line", "/multi.txt", Options{Pattern: `begin\smiddle`}, nil, false},
			{"multiline", "/multi.txt", Options{Pattern: `begin.middle`, Multiline: true}, []string{"/multi.txt:1:begin\nmiddle"}, false},
			{"max file size skips", "/src", Options{Pattern: "argv", MaxFileSize: 20, Include: []string{"*.go"}}, []string{"/src/sub/c.go:1:x := argv"}, false},
			{"a symlink named directly is followed", "/src/link.go", Options{Pattern: "Argv"}, []string{"/src/link.go:2:func Argv() {}"}, false},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res, err := Run(ctx, s, c.path, c.o)
				if err != nil {
					t.Fatalf("Grep: %v", err)
				}
				if got := lines(res.Matches); !reflect.DeepEqual(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
					t.Errorf("matches:\n got %q\nwant %q", got, c.want)
				}
				if res.Truncated != c.tr {
					t.Errorf("truncated: got %v, want %v", res.Truncated, c.tr)
				}
			})
		}

		t.Run("context", func(t *testing.T) {
			res, err := Run(ctx, s, "ctx.txt", Options{Pattern: "MATCH", ContextBefore: 3, ContextAfter: 1})
			if err != nil || len(res.Matches) != 1 {
				t.Fatalf("Grep: %v %v", res, err)
			}
			m := res.Matches[0]
			if m.Line != 3 || !reflect.DeepEqual(m.Before, []string{"one", "two"}) || !reflect.DeepEqual(m.After, []string{"four"}) {
				t.Errorf("got line %d before %q after %q, want 3 [one two] [four]", m.Line, m.Before, m.After)
			}
			if res.FilesSearched != 1 || res.FilesMatched != 1 {
				t.Errorf("files searched/matched: got %d/%d, want 1/1", res.FilesSearched, res.FilesMatched)
			}
		})
		t.Run("counts", func(t *testing.T) {
			res, err := Run(ctx, s, "/src", Options{Pattern: "argv"})
			if err != nil {
				t.Fatal(err)
			}
			// searched: .hidden.txt a.go b.py c.go z.ts zz.min.js (bin.dat binary, link not followed)
			if res.FilesSearched != 6 || res.FilesMatched != 6 {
				t.Errorf("files searched/matched: got %d/%d, want 6/6", res.FilesSearched, res.FilesMatched)
			}
		})
		t.Run("errors", func(t *testing.T) {
			var pe *pathmatch.PatternError
			if _, err := Run(ctx, s, "/src", Options{Pattern: "a(b"}); !errors.As(err, &pe) {
				t.Errorf("bad regex: got %v, want *pathmatch.PatternError", err)
			}
			if _, err := Run(ctx, s, "/src", Options{Pattern: "a", Type: "nope"}); !errors.As(err, &pe) {
				t.Errorf("unknown type: got %v, want *pathmatch.PatternError", err)
			}
			if _, err := Run(ctx, s, "/missing", Options{Pattern: "a"}); !errors.Is(err, unix.ENOENT) {
				t.Errorf("missing: got %v, want ENOENT", err)
			}
			if _, err := Run(ctx, s, "/src", Options{Pattern: "a", OneFile: true}); !errors.Is(err, unix.EISDIR) {
				t.Errorf("one file on a dir: got %v, want EISDIR", err)
			}
		})
	})
}

// TestGrepParallelDeterministic: many files searched by the worker pool
// give the same, ordered answer every time.
func TestGrepParallelDeterministic(t *testing.T) {
	root := t.TempDir()
	tree := map[string]string{}
	for i := range 300 {
		tree[fmt.Sprintf("d%02d/f%03d.txt", i%17, i)] = strings.Repeat("noise\n", i%7) + fmt.Sprintf("needle %d\n", i)
	}
	mk(t, root, tree)
	s, err := core.Open("default", root, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := Run(ctx, s, "/", Options{Pattern: "needle", MaxResults: 10000})
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Matches) != 300 || first.FilesSearched != 300 {
		t.Fatalf("got %d matches in %d files, want 300/300", len(first.Matches), first.FilesSearched)
	}
	for i := 1; i < len(first.Matches); i++ {
		if first.Matches[i-1].File >= first.Matches[i].File {
			t.Fatalf("out of order: %s before %s", first.Matches[i-1].File, first.Matches[i].File)
		}
	}
	for range 5 {
		again, _ := Run(ctx, s, "/", Options{Pattern: "needle", MaxResults: 37, Offset: 11})
		if !reflect.DeepEqual(again.Matches, first.Matches[11:48]) || !again.Truncated {
			t.Fatalf("paged answer differs from the full one")
		}
	}
}
