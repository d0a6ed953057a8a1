package core

import (
	"path"
	"testing"
)

// grep's include, exclude and type globs, case by case.
func TestGrepGlobs(t *testing.T) {
	cases := []struct {
		rel  string
		pats []string
		want bool
	}{
		{"x.go", nil, false},
		{"a/x.go", []string{"*.go"}, true},
		{"a/x.py", []string{"*.go"}, false},
		{"a/x.py", []string{"*.go", "*.py"}, true},
		{"a/x.go", []string{"a/*.go"}, true},
		{"b/a/x.go", []string{"a/*.go"}, false},
		{"a/x.go", []string{"**/a/*.go"}, true},
		{"b/a/x.go", []string{"**/a/*.go"}, false},
		{"a/b/x.go", []string{"**/**/*.go"}, true},
		{"x.go", []string{"./x.go"}, true},
		{"a/x.go", []string{"./x.go"}, true},
		{"a/x", []string{"/a/x"}, true},
		{"a/x", []string{"a/x/"}, true},
		{"x", []string{""}, false},
		{"x", []string{"**/"}, false},
		{"d/a", []string{"[/a]"}, false},
		{"a", []string{"[/a]"}, true},
		{"x", []string{"["}, false},
		{".git", GrepDefaultExcludes, true},
		{"a/b.pyc", GrepDefaultExcludes, true},
		{"a/.gitignore", GrepDefaultExcludes, false},
	}
	for _, c := range cases {
		if got := anyGlob(c.pats, path.Base(c.rel), c.rel); got != c.want {
			t.Errorf("anyGlob(%q, %q): got %v, want %v", c.pats, c.rel, got, c.want)
		}
	}
}
