package rest

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/internal/testenv"
)

// TestUIPickerForks runs the console's forks.js (the embedded module)
// under node: the picker lists each sandbox once, a fork right under its
// parent, the forks of one parent by name, forks of forks one step
// further in; a fork whose parent the list does not hold (a sandbox
// token's list) stands alone.
func TestUIPickerForks(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		testenv.Skip(t, []string{"SANDFS_REQUIRE_UI"}, "node is not on PATH: %v", err)
	}
	cases := []struct {
		name string
		list string // GET /v1/sandboxes's sandboxes
		want string // the picker's labels, one a line
	}{
		{"no forks", `[{"name":"default"},{"name":"a"},{"name":"b"}]`, "default\na\nb"},
		{"forks under their parent, by name",
			`[{"name":"default"},{"name":"a"},{"name":"a-z","from":"a"},{"name":"b"},{"name":"b-1","from":"default"},{"name":"c-0","from":"a"}]`,
			"default\n↳ b-1\na\n↳ a-z\n↳ c-0\nb"},
		{"a fork of a fork", `[{"name":"default"},{"name":"f","from":"default"},{"name":"g","from":"f"},{"name":"h","from":"default"}]`,
			"default\n↳ f\n\u00a0\u00a0↳ g\n↳ h"},
		{"the parent not in the list", `[{"name":"only","from":"gone","checkpoint":"cp_000000000001"}]`, "only"},
		{"a loop of parents", `[{"name":"p","from":"q"},{"name":"q","from":"p"}]`, "p\n↳ q"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := uiModuleDir(t)
			check := `import { pickerLabel, pickerOrder } from './forks.js';
console.log(JSON.stringify(pickerOrder(` + c.list + `).map(pickerLabel).join('\n')));
`
			if err := os.WriteFile(filepath.Join(dir, "forks_check.js"), []byte(check), 0o644); err != nil {
				t.Fatal(err)
			}
			out, err := exec.Command(node, filepath.Join(dir, "forks_check.js")).CombinedOutput()
			if err != nil {
				t.Fatalf("node: %v\n%s", err, out)
			}
			var got string
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if got != c.want {
				t.Errorf("picker:\n%s\nwant:\n%s", got, c.want)
			}
			if n := strings.Count(got, "\n") + 1; n != strings.Count(c.list, `"name"`) {
				t.Errorf("picker lists %d sandboxes of %d", n, strings.Count(c.list, `"name"`))
			}
		})
	}
}
