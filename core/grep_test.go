package core

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/internal/testenv"
)

// lines renders matches as "file:line:text" for comparison.
func lines(ms []GrepMatch) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = fmt.Sprintf("%s:%d:%s", m.File, m.Line, m.Text)
	}
	return out
}

func TestGrep(t *testing.T) {
	modes(t, func(t *testing.T, s *Sandbox, root string) {
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
			o    GrepOptions
			want []string
			tr   bool
		}{
			{"literal, default excludes, binary and symlink skipped", "/src", GrepOptions{Pattern: "argv"}, []string{
				"/src/.hidden.txt:1:argv hidden",
				"/src/a.go:3:// argv here",
				"/src/b.py:2:print(sys.argv)",
				"/src/sub/c.go:1:x := argv",
				"/src/sub/deeper/z.ts:1:const argv = 1",
				"/src/sub/deeper/zz.min.js:1:argv",
			}, false},
			{"case insensitive", "/src/a.go", GrepOptions{Pattern: "ARGV", CaseInsensitive: true}, []string{"/src/a.go:2:func Argv() {}", "/src/a.go:3:// argv here"}, false},
			{"regex", "/src", GrepOptions{Pattern: `^x :=|sys\.\w+\)`, Type: "go,py"}, []string{"/src/b.py:2:print(sys.argv)", "/src/sub/c.go:1:x := argv"}, false},
			{"fixed strings keep metacharacters", "/src/b.py", GrepOptions{Pattern: "sys.argv)", FixedStrings: true}, []string{"/src/b.py:2:print(sys.argv)"}, false},
			{"type alias", "/src", GrepOptions{Pattern: "argv", Type: "ts"}, []string{"/src/sub/deeper/z.ts:1:const argv = 1"}, false},
			{"include glob", "/src", GrepOptions{Pattern: "argv", Include: []string{"*.py"}}, []string{"/src/b.py:2:print(sys.argv)"}, false},
			{"exclude replaces the defaults", "/src", GrepOptions{Pattern: "argv", Exclude: []string{"sub", ".*", "*.py"}}, []string{
				"/src/a.go:3:// argv here", "/src/node_modules/m.js:1:argv in node",
			}, false},
			{"not recursive", "/src", GrepOptions{Pattern: "argv", NoRecurse: true}, []string{
				"/src/.hidden.txt:1:argv hidden", "/src/a.go:3:// argv here", "/src/b.py:2:print(sys.argv)",
			}, false},
			{"max results truncates", "/src", GrepOptions{Pattern: "argv", MaxResults: 2}, []string{
				"/src/.hidden.txt:1:argv hidden", "/src/a.go:3:// argv here",
			}, true},
			{"offset pages", "/src", GrepOptions{Pattern: "argv", MaxResults: 2, Offset: 2}, []string{
				"/src/b.py:2:print(sys.argv)", "/src/sub/c.go:1:x := argv",
			}, true},
			{"offset past the end", "/src", GrepOptions{Pattern: "argv", Offset: 50}, nil, false},
			{"exactly max results is not truncated", "/src/a.go", GrepOptions{Pattern: "rgv", MaxResults: 2, CaseInsensitive: true}, []string{"/src/a.go:2:func Argv() {}", "/src/a.go:3:// argv here"}, false},
			{"file without final newline", "/nonl.txt", GrepOptions{Pattern: "argv$"}, []string{"/nonl.txt:1:last line argv"}, false},
			{"a match crossing a newline is not one line", "/multi.txt", GrepOptions{Pattern: `begin\smiddle`}, nil, false},
			{"multiline", "/multi.txt", GrepOptions{Pattern: `begin.middle`, Multiline: true}, []string{"/multi.txt:1:begin\nmiddle"}, false},
			{"max file size skips", "/src", GrepOptions{Pattern: "argv", MaxFileSize: 20, Include: []string{"*.go"}}, []string{"/src/sub/c.go:1:x := argv"}, false},
			{"a symlink named directly is followed", "/src/link.go", GrepOptions{Pattern: "Argv"}, []string{"/src/link.go:2:func Argv() {}"}, false},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				res, err := s.Grep(ctx, c.path, c.o)
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
			res, err := s.Grep(ctx, "ctx.txt", GrepOptions{Pattern: "MATCH", ContextBefore: 3, ContextAfter: 1})
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
			res, err := s.Grep(ctx, "/src", GrepOptions{Pattern: "argv"})
			if err != nil {
				t.Fatal(err)
			}
			// searched: .hidden.txt a.go b.py c.go z.ts zz.min.js (bin.dat binary, link not followed)
			if res.FilesSearched != 6 || res.FilesMatched != 6 {
				t.Errorf("files searched/matched: got %d/%d, want 6/6", res.FilesSearched, res.FilesMatched)
			}
		})
		t.Run("errors", func(t *testing.T) {
			var pe *PatternError
			if _, err := s.Grep(ctx, "/src", GrepOptions{Pattern: "a(b"}); !errors.As(err, &pe) {
				t.Errorf("bad regex: got %v, want *PatternError", err)
			}
			if _, err := s.Grep(ctx, "/src", GrepOptions{Pattern: "a", Type: "nope"}); !errors.As(err, &pe) {
				t.Errorf("unknown type: got %v, want *PatternError", err)
			}
			if _, err := s.Grep(ctx, "/missing", GrepOptions{Pattern: "a"}); !errors.Is(err, unix.ENOENT) {
				t.Errorf("missing: got %v, want ENOENT", err)
			}
			if _, err := s.Grep(ctx, "/src", GrepOptions{Pattern: "a", OneFile: true}); !errors.Is(err, unix.EISDIR) {
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
	s, err := Open("default", root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	first, err := s.Grep(ctx, "/", GrepOptions{Pattern: "needle", MaxResults: 10000})
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
		again, _ := s.Grep(ctx, "/", GrepOptions{Pattern: "needle", MaxResults: 37, Offset: 11})
		if !reflect.DeepEqual(again.Matches, first.Matches[11:48]) || !again.Truncated {
			t.Fatalf("paged answer differs from the full one")
		}
	}
}

func TestUploadEventsAndReplace(t *testing.T) {
	root := t.TempDir()
	s, err := Open("default", root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk(t, root, map[string]string{"d/old.txt": "old"})
	os.Chmod(filepath.Join(root, "d/old.txt"), 0o640)
	ap, n, err := s.Upload(ctx, "/d/old.txt", strings.NewReader("new content"), UploadOptions{})
	if err != nil || ap != "/d/old.txt" || n != 11 {
		t.Fatalf("Upload: %q %d %v", ap, n, err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "d/old.txt"))
	st, _ := os.Stat(filepath.Join(root, "d/old.txt"))
	if string(b) != "new content" || st.Mode().Perm() != 0o640 {
		t.Errorf("after: %q %v, want new content 0640", b, st.Mode())
	}
	ents, _ := os.ReadDir(filepath.Join(root, "d"))
	if len(ents) != 1 {
		t.Errorf("leftovers in d: %v", ents)
	}
	// A failing reader leaves the old content and no spool file.
	if _, _, err := s.Upload(ctx, "/d/old.txt", io.MultiReader(strings.NewReader("x"), errReader{}), UploadOptions{}); err == nil {
		t.Errorf("failing reader: got nil error")
	}
	b, _ = os.ReadFile(filepath.Join(root, "d/old.txt"))
	ents, _ = os.ReadDir(filepath.Join(root, "d"))
	if string(b) != "new content" || len(ents) != 1 {
		t.Errorf("after a failed upload: %q, %d entries", b, len(ents))
	}
	es := journalAll(s)
	var got []string
	for _, e := range es {
		p := e.Path
		if strings.Contains(p, UploadPrefix) {
			p = "PART"
		}
		o := e.OldPath
		if strings.Contains(o, UploadPrefix) {
			o = "PART"
		}
		got = append(got, string(e.Type)+" "+p+" "+o)
	}
	want := []string{"create PART ", "write PART ", "chmod PART ", "rename /d/old.txt PART", "create PART ", "remove PART "}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }

func TestWriteTarRoundTrip(t *testing.T) {
	root := t.TempDir()
	s, err := Open("default", root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk(t, root, map[string]string{
		"src/a.txt": "a", "src/sub/b.txt": "bb", "src/empty/": "", "src/rel": "->sub/b.txt", "src/abs": "->/etc/passwd",
		"outside.txt": "x",
	})
	var buf bytes.Buffer
	if err := s.WriteTar(ctx, "/src", &buf); err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(bytes.NewReader(buf.Bytes()))
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		n := h.Name
		if h.Typeflag == tar.TypeSymlink {
			n += " -> " + h.Linkname
		}
		names = append(names, n)
	}
	want := []string{"a.txt", "abs -> /etc/passwd", "empty/", "rel -> sub/b.txt", "sub/", "sub/b.txt"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("entries:\n got %q\nwant %q", names, want)
	}
	if err := s.WriteTar(ctx, "/src/a.txt", io.Discard); !errors.Is(err, unix.ENOTDIR) {
		t.Errorf("tar of a file: got %v, want ENOTDIR", err)
	}
}

func TestXattr(t *testing.T) {
	root := t.TempDir()
	s, err := Open("default", root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk(t, root, map[string]string{"f": "x", "l": "->f"})
	if _, err := s.SetXattr(ctx, "/l", "user.k", []byte("v\x00bin")); err != nil {
		if errors.Is(err, unix.EOPNOTSUPP) {
			testenv.Skip(t, nil, "no user xattrs on this filesystem")
		}
		t.Fatal(err)
	}
	_, xs, err := s.Xattrs(ctx, "/f", "")
	if err != nil || string(xs["user.k"]) != "v\x00bin" {
		t.Errorf("Xattrs: %q %v", xs, err)
	}
	if _, _, err := s.Xattrs(ctx, "/f", "user.missing"); !errors.Is(err, unix.ENODATA) {
		t.Errorf("missing: got %v, want ENODATA", err)
	}
	if _, err := s.RemoveXattr(ctx, "/f", "user.k"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RemoveXattr(ctx, "/f", "user.k"); !errors.Is(err, unix.ENODATA) {
		t.Errorf("remove missing: got %v, want ENODATA", err)
	}
	var chmods int
	for _, e := range journalAll(s) {
		if e.Type == journal.Chmod && e.Path == "/f" || e.Path == "/l" {
			chmods++
		}
	}
	if chmods != 2 {
		t.Errorf("chmod events: got %d, want 2", chmods)
	}
}

func journalAll(s *Sandbox) []journal.Event {
	es, _ := s.Journal().Since(0, 100000)
	return es
}
