package testenv

import (
	"os"
	"path/filepath"
	"testing"
)

// BadNames makes, in root, two files whose names are not UTF-8 ("a\xff",
// "a\xfe"), the file literally named "a\uFFFD" that both would turn into,
// and a directory "b\xff" holding a file: each file's content is its name
// spelled in hex, with a line "needle".
func BadNames(t *testing.T, root string) {
	t.Helper()
	for name, content := range map[string]string{
		"a\xff": "ff\nneedle\n", "a\xfe": "fe\nneedle\n", "a\uFFFD": "fffd\nneedle\n", "ok": "ok\nneedle\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(root, "b\xff"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "b\xff", "inner"), []byte("inner\nneedle\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
