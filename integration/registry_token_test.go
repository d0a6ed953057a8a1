package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRegistryTokens: each sandbox, the fixed default too, has its token
// in STATE/sandboxes/NAME/token (0600), kept across restarts, and it opens
// its own sandbox's routes only. (The route table's full check is rest's.)
func TestRegistryTokens(t *testing.T) {
	d, dir := startRegistry(t)
	tokA := createSandbox(t, d, "alpha")
	createSandbox(t, d, "beta")
	for _, name := range []string{"alpha", "beta", "default"} {
		f := filepath.Join(d.State, "sandboxes", name, "token")
		fi, err := os.Stat(f)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: %v %v, want mode 0600", f, fi, err)
		}
		b, _ := os.ReadFile(f)
		if tok := strings.TrimSpace(string(b)); len(tok) != 64 || tok == d.Token || (name == "alpha" && tok != tokA) {
			t.Errorf("%s holds %q (POST answered %q, the daemon's %q)", f, tok, tokA, d.Token)
		}
	}
	if st, b := named(t, d, tokA, "PUT", "alpha", "/fs/write?path=/mine", []byte("a")); st != 200 {
		t.Errorf("alpha's token on alpha: %d %s", st, b)
	}
	for _, other := range []string{"beta", "default"} {
		if st, b := named(t, d, tokA, "GET", other, "/fs/list?path=/", nil); st != 401 && st != 403 {
			t.Errorf("alpha's token on %s: %d %s, want 401 or 403", other, st, b)
		}
	}
	if st, b := named(t, d, tokA, "DELETE", "beta", "", nil); st != 401 && st != 403 {
		t.Errorf("alpha's token deleting beta: %d %s", st, b)
	}
	// The CLI prints it from the state directory.
	res := d.CLI(t, nil, "sandbox", "token", "alpha")
	if res.Code != 0 || strings.TrimSpace(res.Stdout) != tokA {
		t.Errorf("sandfs sandbox token alpha: %s", res)
	}
	// Kept across a restart.
	d.Stop(t)
	d2 := startDaemon(t, "--sandboxes", dir, "--root", d.Root, "--state", d.State)
	if st, b := named(t, d2, tokA, "GET", "alpha", "/fs/read?path=/mine", nil); st != 200 || string(b) != "a" {
		t.Errorf("alpha's token after a restart: %d %q", st, b)
	}
}
