package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTwoDaemonsOneState: two daemons of one user sharing a state
// directory (the default one, without --state) each serve their own root
// as "default", each with a journal of its own; a second daemon on a root
// already served is refused, naming the first one's pid.
func TestTwoDaemonsOneState(t *testing.T) {
	state := t.TempDir()
	rootA, rootB := t.TempDir(), t.TempDir()
	a := startDaemon(t, "--root", rootA, "--state", state)
	b := startDaemon(t, "--root", rootB, "--state", state)
	restPut(t, a, "/from-a", "a")
	restPut(t, b, "/from-b", "b")
	for _, c := range []struct {
		d         *Daemon
		mine, not string
	}{{a, "/from-a", "/from-b"}, {b, "/from-b", "/from-a"}} {
		var paths []string
		for _, e := range keptEvents(t, c.d) {
			paths = append(paths, e.Path)
		}
		joined := strings.Join(paths, " ")
		if !strings.Contains(joined, c.mine) || strings.Contains(joined, c.not) {
			t.Errorf("a daemon's journal tells %q; want %s and not %s", joined, c.mine, c.not)
		}
	}
	if _, err := os.Stat(filepath.Join(state, "sandboxes", "default", "journal.db")); err != nil {
		t.Errorf("the first root's journal is not in the state's default: %v", err)
	}

	// A second daemon on a root already served: refused, naming the pid.
	cmd := exec.Command(sandfsBin(t), "serve", "--root", rootA, "--state", t.TempDir(), "--listen", "127.0.0.1:0")
	done := make(chan []byte, 1)
	go func() { out, _ := cmd.CombinedOutput(); done <- out }()
	select {
	case out := <-done:
		if want := fmt.Sprintf("served by another daemon (pid %d)", a.cmd.Process.Pid); !strings.Contains(string(out), want) {
			t.Errorf("a second daemon on the same root: %s; want it refused with %q", out, want)
		}
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatal("a second daemon on the same root did not exit within 60s")
	}
}
