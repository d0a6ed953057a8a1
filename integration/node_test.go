package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"sandfs/internal/testenv"
)

// requireNode finds node and the npm packages a test drives, installed in
// testdata dir by its setup.sh (tests never download); each of needFiles
// must exist too. What is missing skips the test loudly, or fails it when
// the environment variable env is 1 (CI sets it).
func requireNode(t *testing.T, dir, pkg, env, what string, needFiles ...string) (node, abs string) {
	t.Helper()
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	node, nodeErr := exec.LookPath("node")
	missing := ""
	if nodeErr != nil {
		missing = "node is not on PATH"
	}
	for _, f := range needFiles {
		if _, err := os.Stat(f); missing == "" && err != nil {
			missing = f + " is absent"
		}
	}
	if _, err := os.Stat(filepath.Join(abs, "node_modules", pkg, "package.json")); missing == "" && err != nil {
		missing = fmt.Sprintf("integration/%s/node_modules is absent (run integration/%s/setup.sh)", dir, dir)
	}
	if missing != "" {
		testenv.Skip(t, []string{env}, "%s: %s", what, missing)
	}
	return node, abs
}
