package testenv

import (
	"os"
	"strconv"
	"testing"
)

// Count is the positive integer in the environment variable env (a test's
// knob for a longer run: SANDFS_RACE_ROUNDS, ESCAPE_ITERATIONS, …), or def
// when it is unset. Anything else fails t.
func Count(t testing.TB, env string, def int) int {
	t.Helper()
	s := os.Getenv(env)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		t.Fatalf("%s=%q: want a positive integer", env, s)
	}
	return n
}
