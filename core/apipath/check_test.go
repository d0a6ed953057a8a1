package apipath

import (
	"strings"
	"testing"
)

// TestCheck: each shape a client path may not have, with its reason,
// and ".." refused only when strict.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		p      string
		strict bool
		want   Problem
	}{
		{"/a/b", true, OK},
		{"a/./b", true, OK},
		{"", false, Empty},
		{"/a\x00b", false, NUL},
		{"/" + strings.Repeat("a/", 2048), false, TooLong},
		{"/" + strings.Repeat("n", 256), false, NameTooLong},
		{"/" + strings.Repeat("n", 255), false, OK},
		{"/a/../b", false, OK},
		{"/a/../b", true, DotDot},
		{"..", true, DotDot},
	} {
		if got := Check(c.p, c.strict); got != c.want {
			t.Errorf("Check(%.40q, %v) = %q, want %q", c.p, c.strict, got, c.want)
		}
	}
}
