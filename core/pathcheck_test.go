package core

import (
	"strings"
	"testing"
)

// TestCheckPath: each shape a client path may not have, with its reason,
// and ".." refused only when strict.
func TestCheckPath(t *testing.T) {
	for _, c := range []struct {
		p      string
		strict bool
		want   PathProblem
	}{
		{"/a/b", true, PathOK},
		{"a/./b", true, PathOK},
		{"", false, PathEmpty},
		{"/a\x00b", false, PathNUL},
		{"/" + strings.Repeat("a/", 2048), false, PathTooLong},
		{"/" + strings.Repeat("n", 256), false, PathNameTooLong},
		{"/" + strings.Repeat("n", 255), false, PathOK},
		{"/a/../b", false, PathOK},
		{"/a/../b", true, PathDotDot},
		{"..", true, PathDotDot},
	} {
		if got := CheckPath(c.p, c.strict); got != c.want {
			t.Errorf("CheckPath(%.40q, %v) = %q, want %q", c.p, c.strict, got, c.want)
		}
	}
}
