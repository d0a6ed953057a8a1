package pathmatch

import "testing"

// Each matcher case by case, as its callers used it before it moved here:
// watchers' excludes (InAnyComponent) and includes (BaseOrPathLoose),
// grep's globs (BaseOrPath), the find and glob routes' segment globs.

var inAnyComponentCases = []struct {
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

var baseOrPathLooseCases = []struct {
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

func TestInAnyComponent(t *testing.T) {
	for _, c := range inAnyComponentCases {
		if got := InAnyComponent(c.rel, c.pats); got != c.want {
			t.Errorf("InAnyComponent(%q, %q): got %v, want %v", c.rel, c.pats, got, c.want)
		}
	}
}

// A watcher's empty include list lets everything through; the matcher
// itself is asked only of a list.
func TestBaseOrPathLoose(t *testing.T) {
	for _, c := range baseOrPathLooseCases {
		if got := len(c.pats) == 0 || BaseOrPathLoose(c.rel, c.pats); got != c.want {
			t.Errorf("BaseOrPathLoose(%q, %q): got %v, want %v", c.rel, c.pats, got, c.want)
		}
	}
}

func TestBaseOrPath(t *testing.T) {
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
		{".git", DefaultExcludes, true},
		{"a/b.pyc", DefaultExcludes, true},
		{"a/.gitignore", DefaultExcludes, false},
	}
	for _, c := range cases {
		if got := BaseOrPath(c.rel, c.pats); got != c.want {
			t.Errorf("BaseOrPath(%q, %q): got %v, want %v", c.rel, c.pats, got, c.want)
		}
	}
}

// TestGlob adds to TestCompileGlob (check_test.go), which matches the
// usual globs through CompileGlob: the slashes Compile trims and folds.
func TestGlob(t *testing.T) {
	cases := []struct {
		pat, rel string
		want     bool
	}{
		{"/src/*.py/", "src/app.py", true},
		{"a//b", "a/b", true},
		{"a/**/**", "a", true},
		{"**/**/b", "x/y/b", true},
		{"a/**/b", "a/x/c", false},
	}
	for _, c := range cases {
		g, err := Compile(c.pat)
		if err != nil {
			t.Fatalf("Compile(%q): %v", c.pat, err)
		}
		if got := g.Match(c.rel); got != c.want {
			t.Errorf("Compile(%q).Match(%q): got %v, want %v", c.pat, c.rel, got, c.want)
		}
	}
	for _, bad := range []string{"", "./", "/", "[", "a/[/b", "[/a]"} {
		if _, err := Compile(bad); err != ErrBadGlob {
			t.Errorf("Compile(%q): got %v, want ErrBadGlob", bad, err)
		}
	}
	for pat, want := range map[string]int{"*.go": 1, "a/b/*": 3, "a//b": 2, "**/x": 0} {
		g, _ := Compile(pat)
		if got := g.MaxDepth(); got != want {
			t.Errorf("MaxDepth(%q): got %d, want %d", pat, got, want)
		}
	}
}
