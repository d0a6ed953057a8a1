// Package coretest holds what the tests of core's subpackages need of a
// Sandbox: one opened on a fresh root in each resolution mode. It is
// imported by tests only; core's own tests cannot import it (it imports
// core) and keep their copy in core/helpers_test.go.
package coretest

import (
	"testing"

	"sandfs/core"
)

// Modes runs f once with openat2 resolution (where the kernel has it) and
// once with the user-space walk, each on a fresh root.
func Modes(t *testing.T, f func(t *testing.T, s *core.Sandbox, root string)) {
	for _, walk := range []bool{false, true} {
		name := "openat2"
		if walk {
			name = "walk"
		}
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			s, err := core.Open("default", root, core.Options{NoOpenat2: walk})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			if !walk && !s.UsesOpenat2() {
				t.Log("openat2 unavailable here; both runs use the walk")
			}
			f(t, s, root)
		})
	}
}
