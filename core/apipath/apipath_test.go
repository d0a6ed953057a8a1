package apipath

import "testing"

func TestApipath(t *testing.T) {
	for _, c := range []struct{ p, dir, name string }{
		{"/", "/", ""}, {"/a", "/", "a"}, {"/a/b", "/a", "b"}, {"/a/b/c", "/a/b", "c"},
	} {
		if d, n := Split(c.p); d != c.dir || n != c.name {
			t.Errorf("Split(%q) = %q, %q; want %q, %q", c.p, d, n, c.dir, c.name)
		}
		if c.name != "" && Child(c.dir, c.name) != c.p {
			t.Errorf("Child(%q, %q) = %q, want %q", c.dir, c.name, Child(c.dir, c.name), c.p)
		}
	}
	for _, c := range []struct {
		p, dir        string
		within, under bool
	}{
		{"/a", "/a", true, false}, {"/a/b", "/a", true, true}, {"/ab", "/a", false, false},
		{"/a", "/", true, false}, {"/", "/", true, false},
	} {
		if Within(c.p, c.dir) != c.within || Under(c.p, c.dir) != c.under {
			t.Errorf("Within(%q, %q) = %v, Under = %v; want %v, %v", c.p, c.dir, Within(c.p, c.dir), Under(c.p, c.dir), c.within, c.under)
		}
	}
}
