package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSandboxVerbs: sandfs sandbox create, ls, quota, token and rm against
// a daemon serving --sandboxes DIR.
func TestSandboxVerbs(t *testing.T) {
	d, dir := startRegistry(t)
	res := d.CLI(t, nil, "sandbox", "create", "cli-one", "--quota-bytes", "1M", "--quota-entries", "50")
	tok := strings.TrimSpace(res.Stdout)
	if res.Code != 0 || len(tok) != 64 {
		t.Fatalf("sandbox create: %s", res)
	}
	if b, _ := os.ReadFile(filepath.Join(d.State, "sandboxes", "cli-one", "token")); strings.TrimSpace(string(b)) != tok {
		t.Errorf("create printed %q, the token file holds %q", tok, b)
	}
	if res := d.CLI(t, nil, "sandbox", "token", "cli-one"); strings.TrimSpace(res.Stdout) != tok {
		t.Errorf("sandbox token: %s", res)
	}
	ls := func() map[string][]string {
		res := d.CLI(t, nil, "sandbox", "ls")
		if res.Code != 0 {
			t.Fatalf("sandbox ls: %s", res)
		}
		rows := map[string][]string{}
		for _, l := range strings.Split(strings.TrimSpace(res.Stdout), "\n")[1:] {
			f := strings.Fields(l)
			rows[f[0]] = f[1:]
		}
		return rows
	}
	rows := ls()
	if got := rows["cli-one"]; len(got) != 4 || got[1] != "1048576" || got[3] != "50" {
		t.Errorf("ls row of cli-one %v, want its quota 1048576 and 50", got)
	}
	if got := rows["default"]; len(got) != 4 || got[1] != "-" || got[3] != "-" {
		t.Errorf("ls row of default %v, want no bound", got)
	}
	if res := d.CLI(t, nil, "sandbox", "quota", "cli-one", "2M,7"); res.Code != 0 {
		t.Fatalf("sandbox quota: %s", res)
	}
	if got := ls()["cli-one"]; len(got) != 4 || got[1] != "2097152" || got[3] != "7" {
		t.Errorf("ls row after quota %v", got)
	}
	if q, _ := os.ReadFile(filepath.Join(d.State, "sandboxes", "cli-one", "quota.json")); string(q) != `{"bytes":2097152,"entries":7}`+"\n" {
		t.Errorf("quota.json %q", q)
	}
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{"sandbox", "create", "Bad_Name"}, 3},
		{[]string{"sandbox", "create", "cli-one"}, 3},
		{[]string{"sandbox", "rm", "default"}, 3},
		{[]string{"sandbox", "rm", "nope"}, 2},
		{[]string{"sandbox", "quota", "cli-one", "lots"}, 1},
		{[]string{"sandbox", "token", "nope"}, 1},
		{[]string{"sandbox", "frob"}, 1},
	} {
		if res := d.CLI(t, nil, c.args...); res.Code != c.code {
			t.Errorf("sandfs %s: %s, want exit %d", strings.Join(c.args, " "), res, c.code)
		}
	}
	if res := d.CLI(t, nil, "sandbox", "rm", "cli-one"); res.Code != 0 {
		t.Fatalf("sandbox rm: %s", res)
	}
	if _, ok := ls()["cli-one"]; ok {
		t.Error("cli-one listed after rm")
	}
	if _, err := os.Lstat(filepath.Join(dir, "cli-one")); !os.IsNotExist(err) {
		t.Errorf("DIR/cli-one after rm: %v", err)
	}
}
