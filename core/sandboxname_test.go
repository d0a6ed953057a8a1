package core

import (
	"strings"
	"testing"
)

func TestCheckSandboxName(t *testing.T) {
	for _, tc := range []struct {
		name string
		ok   bool
	}{
		{"a", true}, {"web-1", true}, {"0abc", true}, {strings.Repeat("a", 63), true},
		{"", false}, {strings.Repeat("a", 64), false}, {".", false}, {"..", false},
		{"a/b", false}, {"../x", false}, {"-a", false}, {"a-", false}, {"A", false},
		{"a_b", false}, {"a.b", false}, {"a\x00", false}, {"é", false}, {" a", false},
	} {
		if err := CheckSandboxName(tc.name); (err == nil) != tc.ok {
			t.Errorf("CheckSandboxName(%q) = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
