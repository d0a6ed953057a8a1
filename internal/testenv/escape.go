package testenv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EscapeFixture makes root and, beside it, outside/secret, plus symlinks in
// root pointing out by every route we know.
func EscapeFixture(t testing.TB, root string) (outside string) {
	outside = filepath.Join(filepath.Dir(root), "outside-"+filepath.Base(root))
	Mk(t, outside, map[string]string{"secret": "SECRET", "sub/": ""})
	Mk(t, root, map[string]string{
		"inside":         "INSIDE",
		"dir/f":          "INSIDE",
		"abs":            "->" + outside,
		"absfile":        "->" + outside + "/secret",
		"rel":            "->../" + filepath.Base(outside),
		"dir/deeprel":    "->../../../../../../" + strings.TrimPrefix(outside, "/"),
		"loop1":          "->loop2",
		"loop2":          "->loop1",
		"self":           "->self",
		"dir/up":         "->..",
		"etc":            "->/etc",
		"procself":       "->/proc/self/root",
		"dotdotchain":    "->dir/../dir/../..",
		"dir/absinroot/": "",
	})
	t.Cleanup(func() { os.RemoveAll(outside) })
	return outside
}
