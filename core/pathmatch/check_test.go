package pathmatch

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestCompileGlob(t *testing.T) {
	cases := []struct {
		pat, rel string
		want     bool
	}{
		{"*.go", "a.go", true},
		{"*.go", "x/a.go", false},
		{"**/*.go", "a.go", true},
		{"**/*.go", "x/y/a.go", true},
		{"x/**/*.go", "x/a.go", true},
		{"x/**/*.go", "x/y/z/a.go", true},
		{"x/**/*.go", "w/x/a.go", false},
		{"x/**", "x/y/z", true},
		{"x/**", "x", true},
		{"./src/*.py", "src/app.py", true},
		{"a/**/**/b", "a/b", true},
		{"[ab]?.txt", "b1.txt", true},
		{"*", "x/y", false},
	}
	for _, c := range cases {
		if got := MatchGlob(c.pat, c.rel); got != c.want {
			t.Errorf("MatchGlob(%q, %q): got %v, want %v", c.pat, c.rel, got, c.want)
		}
	}
	for _, bad := range []string{"", "[", "a/[/b"} {
		if _, err := CompileGlob(bad); !errors.Is(err, unix.EINVAL) {
			t.Errorf("CompileGlob(%q): got %v, want EINVAL", bad, err)
		}
	}
	for pat, want := range map[string]int{"*.go": 1, "a/b/*": 3, "**/x": 0} {
		g, _ := CompileGlob(pat)
		if got := g.MaxDepth(); got != want {
			t.Errorf("MaxDepth(%q): got %d, want %d", pat, got, want)
		}
	}
}

// Many "**" segments cost a product, not an exponential: an exponential
// matcher would not end (the test's timeout says so), a product ends at
// once; no clock is read, so a loaded machine cannot fail it.
func TestGlobManyDoubleStars(t *testing.T) {
	g, err := CompileGlob(strings.Repeat("**/a/", 60) + "b")
	if err != nil {
		t.Fatal(err)
	}
	deep := strings.TrimSuffix(strings.Repeat("a/", 200), "/")
	if g.Match(deep) {
		t.Error("matched a path without b")
	}
	if !g.Match(deep + "/b") {
		t.Error("did not match a path ending in b")
	}
}
