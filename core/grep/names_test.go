package grep

import (
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"sandfs/core"
	"sandfs/internal/testenv"
)

// Grep leaves out and counts the names that are not UTF-8 (and does not
// descend such a directory), as List and Walk do (core/names_test.go).
func TestNamesNotUTF8AreNotReported(t *testing.T) {
	modes(t, func(t *testing.T, s *core.Sandbox, root string) {
		testenv.BadNames(t, root)
		want := []string{"/a\uFFFD", "/ok"}
		c, sk := core.WithSkippedNames(ctx)
		res, err := Run(c, s, "/", Options{Pattern: "needle", Exclude: []string{}})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, m := range res.Matches {
			got = append(got, m.File)
		}
		sort.Strings(got)
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("Grep: got %q, want %q", got, want)
		}
		if sk.Count() != 3 {
			t.Errorf("Grep: skipped %d, want 3 (a\\xff, a\\xfe, b\\xff)", sk.Count())
		}
		for _, p := range got {
			if !utf8.ValidString(p) {
				t.Errorf("Grep: reported %q", p)
			}
		}
	})
}
