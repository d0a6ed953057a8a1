package journal

import "testing"

// The exclude and include matchers of watchers, case by case.

var excludeCases = []struct {
	rel  string
	pats []string
	want bool
}{
	{"", []string{".git"}, false},
	{".git", []string{".git"}, true},
	{"a/.git/HEAD", []string{".git"}, true},
	{"a/b.pyc", []string{"*.pyc"}, true},
	{"a/b.py", []string{"*.pyc"}, false},
	{"a/b", []string{"*"}, true},
	{"src/gen/x.go", []string{"src/gen"}, true},
	{"src/gen", []string{"/src/gen/"}, true},
	{"src/genx", []string{"src/gen"}, false},
	{"a/src/gen/x", []string{"src/gen"}, false},
	{"src/gen/x", []string{"src/*"}, true},
	{"a/b/c", []string{"a/b/c"}, true},
	{"a/b/c", []string{"**/c"}, false},
	{"b/c", []string{"**/c"}, true},
	{"x", []string{""}, false},
	{"x", []string{"["}, false},
	{"x", nil, false},
	{"node_modules/p/index.js", DefaultExcludes, true},
	{"a/__pycache__/m.cpython.pyc", DefaultExcludes, true},
	{"src/main.go", DefaultExcludes, false},
}

var includeCases = []struct {
	rel  string
	pats []string
	want bool
}{
	{"x.go", nil, true},
	{"a/x.go", []string{"*.go"}, true},
	{"a/x.py", []string{"*.go"}, false},
	{"a/x.py", []string{"*.go", "*.py"}, true},
	{"a/x.go", []string{"a/*.go"}, true},
	{"b/a/x.go", []string{"a/*.go"}, false},
	{"b/a/x.go", []string{"**/a/*.go"}, true},
	{"a/x.go", []string{"**/a/*.go"}, false},
	{"c/b/a/x.go", []string{"**/a/*.go"}, false},
	{"c/b/x.go", []string{"**/*.go"}, true},
	{"x.go", []string{"./x.go"}, false},
	{"a/x", []string{"/a/x"}, false},
	{"", []string{""}, true},
	{"x", []string{""}, false},
	{"d/a", []string{"[/a]"}, true},
	{"x", []string{"["}, false},
}

func TestExcluded(t *testing.T) {
	for _, c := range excludeCases {
		if got := Excluded(c.rel, c.pats); got != c.want {
			t.Errorf("Excluded(%q, %q): got %v, want %v", c.rel, c.pats, got, c.want)
		}
	}
}

func TestIncluded(t *testing.T) {
	for _, c := range includeCases {
		if got := Included(c.rel, c.pats); got != c.want {
			t.Errorf("Included(%q, %q): got %v, want %v", c.rel, c.pats, got, c.want)
		}
	}
}
