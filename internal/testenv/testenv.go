// Package testenv is how a test says that this machine lacks what it needs
// (root, user xattrs, an account, a tool). On a developer's machine the test
// skips loudly; in CI, which sets SANDFS_REQUIRE_FUSE=1 and provides the
// whole environment, the same call fails the test, so CI can never pass by
// skipping.
package testenv

import (
	"fmt"
	"os"
	"testing"
)

// Required reports whether the environment must be complete: CI sets
// SANDFS_REQUIRE_FUSE=1 (and the test may name more variables, such as
// SANDFS_REQUIRE_SDK).
func Required(envs ...string) bool {
	for _, e := range append([]string{"SANDFS_REQUIRE_FUSE"}, envs...) {
		if os.Getenv(e) == "1" {
			return true
		}
	}
	return false
}

// Skip skips t with the reason, or fails it when the environment is
// required (see Required; envs names variables beyond SANDFS_REQUIRE_FUSE).
func Skip(t testing.TB, envs []string, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if Required(envs...) {
		t.Fatalf("NOT RUN, but the environment is required (SANDFS_REQUIRE_FUSE=1%s): %s", others(envs), msg)
	}
	t.Skipf("\n*** SKIPPING: %s ***\n*** (set SANDFS_REQUIRE_FUSE=1 to make this a failure) ***", msg)
}

func others(envs []string) string {
	s := ""
	for _, e := range envs {
		s += " or " + e + "=1"
	}
	return s
}
