package watch

import (
	"sort"
	"strings"
	"testing"
)

// TestCoverage: a path is covered when every directory above it is
// watched and it is no hole: a directory whose watch is not placed yet
// (its Create not read) covers nothing beneath it.
func TestCoverage(t *testing.T) {
	c := newCoverage()
	for _, d := range []string{"/", "/a", "/a/b", "/x"} {
		c.watch(d)
	}
	c.hole("/x/h")
	for p, want := range map[string]bool{
		"/": true, "/a": true, "/a/b": true, "/a/b/f": true,
		"/a/new": true, "/a/new/f": false, "/a/new/sub/f": false, "/q/r": false,
		"/x/h": false, "/x/h/f": false, "/x/hh": true,
	} {
		if got := c.covers(p); got != want {
			t.Errorf("covers(%s) = %v, want %v", p, got, want)
		}
	}
	c.watch("/a/b/c")
	c.watch("/ab")
	gone := c.unwatch("/a")
	sort.Strings(gone)
	if strings.Join(gone, " ") != "/a /a/b /a/b/c" {
		t.Errorf("unwatch(/a) = %q, want /a and everything watched under it", gone)
	}
	if c.covers("/a/b/f") || !c.covers("/ab/f") || !c.covers("/x/f") {
		t.Error("after unwatch(/a): covered", c.covers("/a/b/f"), c.covers("/ab/f"), c.covers("/x/f"))
	}
	if len(c.kids["/a"]) != 0 || c.kids["/"]["/a"] {
		t.Errorf("kids left: %v", c.kids)
	}
	c.unhole("/x")
	if !c.covers("/x/h") {
		t.Error("a hole outlived unhole of its parent")
	}
}
