package layercheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"sandfs/internal/testenv"
	"strings"
	"testing"
)

// TestLayeringRefuses: on a scratch copy of the module, .ci/layering
// passes as it is, and fails, naming the offender, once a file importing
// a forbidden package is added to each layer.
func TestLayeringRefuses(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		testenv.Skip(t, nil, "bash is not installed")
	}
	src, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	copyModule(t, src, t.TempDir())
}

func copyModule(t *testing.T, src, dst string) {
	out, err := exec.Command("git", "-C", src, "ls-files", "-z", "--cached", "--others", "--exclude-standard").Output()
	if err != nil {
		testenv.Skip(t, nil, "git ls-files (a clone is needed to copy the module): %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(out), "\x00"), "\x00") {
		b, err := os.ReadFile(filepath.Join(src, f))
		if os.IsNotExist(err) {
			continue // removed in the working tree
		}
		if err != nil {
			t.Fatal(err)
		}
		must(t, os.MkdirAll(filepath.Dir(filepath.Join(dst, f)), 0o755))
		must(t, os.WriteFile(filepath.Join(dst, f), b, 0o755))
	}
	run := func() (string, bool) {
		cmd := exec.Command("bash", ".ci/layering")
		cmd.Dir = dst
		cmd.Env = append(os.Environ(), "LAYERING_IMPORTS_ONLY=1")
		out, err := cmd.CombinedOutput()
		return string(out), err == nil
	}
	if out, ok := run(); !ok {
		t.Fatalf("the unchanged copy fails: %s", out)
	}
	for _, c := range []struct{ dir, pkg, imports, says string }{
		{"core", "core", "sandfs/natsout", "core must not import"},
		{"core/journal", "journal", "sandfs/daemon", "import cycle not allowed"},
		{"core/quota", "quota", "sandfs/api", "is a leaf of core and must not import"},
		{"core/watch", "watch", "sandfs/natsout", "core/watch must not import"},
		{"core/watch", "watch", "sandfs/core", "import cycle not allowed"},
		{"rest", "rest", "sandfs/natsout", "rest must not import"},
		{"rest", "rest", "sandfs/fusefs", "rest must not import"},
		// rest imports each family, so a family importing rest is a cycle.
		{"rest/aio", "aio", "sandfs/rest", "import cycle not allowed"},
		{"rest/named", "named", "sandfs/rest/aio", "rest/named must not import"},
		{"rest/sandboxd", "sandboxd", "sandfs/rest/agentfs", "rest/sandboxd must not import"},
		{"rest/mcp", "mcp", "sandfs/rest/named", "rest/mcp must not import"},
		{"fusefs", "fusefs", "sandfs/rest", "fusefs must not import"},
		{"fusefs/uring", "uring", "sandfs/internal/size", "fusefs/uring must not import"},
		{"natsout", "natsout", "sandfs/fusefs", "natsout must not import"},
		{"internal/size", "size", "sandfs/core", "internal must not import"},
		{"api", "api", "sandfs/core/journal", "api must not import"},
		{"bench/load", "load", "sandfs/daemon", "only cmd may import daemon"},
		{"cmd/sandfs", "main", "sandfs/rest", "only daemon may import rest and fusefs"},
	} {
		t.Run(c.dir+"→"+c.imports, func(t *testing.T) {
			f := filepath.Join(dst, c.dir, "zz_layering.go")
			must(t, os.WriteFile(f, []byte("package "+c.pkg+"\n\nimport _ \""+c.imports+"\"\n"), 0o644))
			defer os.Remove(f)
			out, ok := run()
			if ok || !strings.Contains(out, c.says) || !strings.Contains(out, c.imports) && !strings.Contains(out, "sandfs/"+c.dir) {
				t.Errorf("with %s importing %s: ok=%v, said %q; want a failure saying %q", c.dir, c.imports, ok, out, c.says)
			}
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
