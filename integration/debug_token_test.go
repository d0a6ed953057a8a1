package integration

import (
	"io"
	"strings"
	"testing"
)

// TestDebugListenHidesToken: the real daemon's --debug-listen, which has
// no token, shows argv at /debug/pprof/cmdline and in /debug/vars; the
// token given there as --token must not be readable (nor the daemon's
// own, made in its state directory), and the leak checks' fuse_held_dirs
// still parses.
func TestDebugListenHidesToken(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
	}{
		{"--token T", []string{"--token", "debug-flag-token-5f1e2d"}},
		{"--token=T", []string{"--token=debug-flag-token-5f1e2d"}},
		{"state token", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, dbg := startDebugDaemon(t, c.args...)
			if d.Token == "" {
				d.Token = "debug-flag-token-5f1e2d"
			}
			for _, p := range []string{"/debug/pprof/cmdline", "/debug/vars"} {
				resp, err := debugClient.Get(dbg + p)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 || !strings.Contains(string(b), "--debug-listen") {
					t.Fatalf("%s: %s %.200s", p, resp.Status, b)
				}
				if strings.Contains(string(b), d.Token) {
					t.Errorf("%s shows the token: %.300s", p, b)
				}
				if c.args != nil && !strings.Contains(string(b), "REDACTED") {
					t.Errorf("%s: no REDACTED in %.300s", p, b)
				}
			}
			if n := heldDirs(t, dbg); n != 0 {
				t.Errorf("fuse_held_dirs = %d without a mount", n)
			}
		})
	}
}
