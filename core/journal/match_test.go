package journal

import "testing"

func TestCovers(t *testing.T) {
	for _, c := range []struct {
		p, dir    string
		recursive bool
		want      bool
	}{
		{"/w", "/w", false, true},
		{"/w/a", "/w", false, true},
		{"/w/a/b", "/w", false, false},
		{"/w/a/b", "/w", true, true},
		{"/wx", "/w", true, false}, // beside the directory, not in it
		{"/", "/w", true, false},
		{"/a", "/", false, true},
		{"/a/b", "/", false, false},
		{"/a/b", "/", true, true},
		{"", "/", true, false}, // no path (an event's absent old path)
	} {
		if got := Covers(c.p, c.dir, c.recursive); got != c.want {
			t.Errorf("Covers(%q, %q, %v) = %v, want %v", c.p, c.dir, c.recursive, got, c.want)
		}
	}
}
