package grep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/core/pathmatch"
	"sandfs/internal/testenv"
)

// slowPattern compiles to 501 instructions, under MaxPatternInsts, and
// keeps every one of them live on every byte: about 3.5 s a MiB here. Its
// work bound lets it search files of up to about 2 MiB.
const slowPattern = `(.*){1,100}`

// slowLines is n bytes of 72-byte lines.
func slowLines(n int) string {
	l := "the quick brown fox jumps over the lazy dog 0123456789 abcdefghijklmnop\n"
	return strings.Repeat(l, n/len(l))
}

func TestGrepRefusesCostlyPatterns(t *testing.T) {
	root := t.TempDir()
	s, err := core.Open("default", root, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk(t, root, map[string]string{"big.txt": slowLines(1500 << 10), "tree/big.txt": slowLines(1500 << 10), "tree/small.txt": "hello\n"})
	for _, tc := range []struct {
		name, pattern, path string
		oneFile             bool
		want                string
	}{
		{"program size", `(.*){1,1000}`, "/big.txt", true, "compiles to 5001 instructions, more than the limit of 2000"},
		{"program size, tree", `(.*){1,1000}`, "/tree", false, "compiles to 5001 instructions, more than the limit of 2000"},
		{"nested repetition", `((a{1,40}){1,40})`, "/big.txt", true, "invalid repeat count"},
		{"work bound", `(.*){1,300}`, "/big.txt", true, "a pattern of 1501 instructions may search at most 715350 bytes of one file, and /big.txt has 1535976"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, err := Run(ctx, s, tc.path, Options{Pattern: tc.pattern, OneFile: tc.oneFile, MaxFileSize: 16 << 20})
			var pe *pathmatch.PatternError
			if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want a pathmatch.PatternError saying %q", err, tc.want)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("refusal took %v", d)
			}
		})
	}
	// In a tree, a file over the work bound is skipped as too large.
	res, err := Run(ctx, s, "/tree", Options{Pattern: `(.*){1,300}`, MaxFileSize: 16 << 20})
	if err != nil || res.FilesSearched != 1 || len(res.Matches) != 1 || res.Matches[0].File != "/tree/small.txt" {
		t.Errorf("tree: got %d files searched, %d matches, %v; want only small.txt searched", res.FilesSearched, len(res.Matches), err)
	}
	// Globs are bounded too.
	if _, err := Run(ctx, s, "/tree", Options{Pattern: "x", Include: []string{strings.Repeat("*a", 600)}}); !errors.Is(err, pathmatch.ErrPatternTooComplex) {
		t.Errorf("long include glob: got %v, want pathmatch.ErrPatternTooComplex", err)
	}
	if _, err := pathmatch.CompileGlob(strings.Repeat("**/a/", 300)); !errors.Is(err, pathmatch.ErrPatternTooComplex) {
		t.Errorf("long glob: got %v, want pathmatch.ErrPatternTooComplex", err)
	}
}

// A line search never crosses a line, so its answers are those of the
// pattern on each line alone, window edges included; and a match that
// would span lines costs one scan, not one per line.
func TestGrepLineModeSemantics(t *testing.T) {
	root := t.TempDir()
	s, err := core.Open("default", root, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var b strings.Builder
	for i := 0; b.Len() < 300<<10; i++ {
		switch i % 7 {
		case 0:
			b.WriteString("alpha\n")
		case 1:
			b.WriteString("  \t \n")
		case 2:
			b.WriteString("beta gamma " + strings.Repeat("z", i%500) + "\n")
		case 3:
			b.WriteString("\n")
		default:
			fmt.Fprintf(&b, "line %d a b\n", i)
		}
	}
	content := b.String()
	if err := os.WriteFile(filepath.Join(root, "f.txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, pat := range []string{`a\sb`, `alpha\s+beta`, `^\s*$`, `[^x]+`, `a\nb`, `^$`, `z{10}$`, `(?i)ALPHA.`, `\bb\b`, `.`} {
		want := 0
		re := regexp.MustCompile("(?m)" + pat)
		ls := strings.Split(strings.TrimSuffix(content, "\n"), "\n")
		for _, l := range ls {
			if re.MatchString(l) {
				want++
			}
		}
		res, err := Run(ctx, s, "/f.txt", Options{Pattern: pat, OneFile: true, MaxResults: 1 << 30})
		if err != nil {
			t.Fatalf("%s: %v", pat, err)
		}
		if len(res.Matches) != want {
			t.Errorf("%s: %d lines, want %d", pat, len(res.Matches), want)
		}
		for _, m := range res.Matches {
			if m.Line < 1 || m.Line > len(ls) || ls[m.Line-1] != m.Text || !re.MatchString(m.Text) {
				t.Errorf("%s: line %d %q is not a matching line of the file", pat, m.Line, m.Text)
				break
			}
		}
	}
	// Multiline still spans lines.
	res, err := Run(ctx, s, "/f.txt", Options{Pattern: `alpha\n  `, OneFile: true, Multiline: true, MaxResults: 3})
	if err != nil || len(res.Matches) != 3 {
		t.Errorf("multiline: %d matches, %v; want 3", len(res.Matches), err)
	}

	// "a" on every line and one "q" at the end: every line's "a[^z]*q" match
	// runs to the end. It used to be rescanned from each next line.
	if err := os.WriteFile(filepath.Join(root, "aq.txt"), []byte(strings.Repeat("a\n", 1<<19)+"q\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// Not a wall-clock bound (the machine is shared): one scan takes tens
	// of milliseconds, and rescanning from each line, about 250,000 scans
	// of half the file, hours; the grep's own context ends it at 30 s.
	gctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err = Run(gctx, s, "/aq.txt", Options{Pattern: `a[^z]*q`, OneFile: true, MaxFileSize: 16 << 20})
	if err != nil || len(res.Matches) != 0 {
		t.Errorf("a[^z]*q over 1 MiB of lines: %d matches, %v; want no line, in one scan", len(res.Matches), err)
	}
}

// A grep or search whose context ends stops: over a tree, part way through
// its files; in one file, part way through its lines.
func TestGrepStopsWhenCanceled(t *testing.T) {
	root := t.TempDir()
	s, err := core.Open("default", root, core.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tree := map[string]string{"one.txt": slowLines(2 << 20)}
	const files = 40
	for i := range files {
		tree[fmt.Sprintf("tree/d%d/f%02d.txt", i%4, i)] = slowLines(200 << 10)
	}
	mk(t, root, tree)
	for _, tc := range []struct {
		name, path string
		oneFile    bool
	}{
		{"tree", "/tree", false},
		{"one file", "/one.txt", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := runtime.NumGoroutine()
			c, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			before := grepFilesRead.Load()
			start := time.Now()
			_, err := Run(c, s, tc.path, Options{Pattern: slowPattern, OneFile: tc.oneFile, MaxFileSize: 16 << 20, MaxResults: 1 << 20})
			took := time.Since(start)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("got %v, want the context's error", err)
			}
			if took > 500*time.Millisecond {
				t.Errorf("returned %v after the start, want within 500 ms of the 50 ms cancel", took)
			}
			if !tc.oneFile {
				if n := grepFilesRead.Load() - before; n >= files {
					t.Errorf("read %d files of %d, want fewer", n, files)
				}
			}
			testenv.Settled(t, base)
		})
	}
}

// A refused pattern is quoted as the client typed it, never as the
// expression sandfs made of it.
func TestPatternErrorQuotesWhatWasTyped(t *testing.T) {
	for _, tc := range []struct{ typed, want string }{
		{"(", "missing closing ): `(`"},
		{"a[", "missing closing ]: `[`"},
		{"x**", "invalid nested repetition operator: `**`"},
	} {
		_, _, err := compileRegexp(tc.typed, "(?m)"+tc.typed, true)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "(?m)") {
			t.Errorf("%q: %v, want it to say %q and no (?m)", tc.typed, err, tc.want)
		}
	}
}
