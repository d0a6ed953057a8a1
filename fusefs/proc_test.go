package fusefs

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestProcess: the command name and cgroup of a live pid are what /proc
// says; a pid that is gone, and pid 0, leave both empty.
func TestProcess(t *testing.T) {
	comm, cgroup := process(uint32(os.Getpid()))
	want, err := os.ReadFile("/proc/self/comm")
	if err != nil {
		t.Fatal(err)
	}
	if comm != strings.TrimSuffix(string(want), "\n") || comm == "" {
		t.Errorf("comm %q, want %q", comm, want)
	}
	cg, _ := os.ReadFile("/proc/self/cgroup")
	if wantCg := unifiedCgroup(cg, false); cgroup != wantCg {
		t.Errorf("cgroup %q, want %q", cgroup, wantCg)
	}
	if strings.Contains(string(cg), "0::") && !strings.HasPrefix(cgroup, "/") {
		t.Errorf("cgroup %q from %q", cgroup, cg)
	}

	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if c, g := process(uint32(cmd.Process.Pid)); c != "" || g != "" {
		t.Errorf("a gone pid: %q %q, want empty", c, g)
	}
	if c, g := process(0); c != "" || g != "" {
		t.Errorf("pid 0: %q %q", c, g)
	}
}

func TestUnifiedCgroup(t *testing.T) {
	for _, c := range []struct {
		in   string
		cut  bool
		want string
	}{
		{"0::/user.slice/a.scope\n", false, "/user.slice/a.scope"},
		{"12:cpu:/x\n1:name=systemd:/y\n0::/z\n", false, "/z"},
		{"12:cpu:/x\n", false, ""},
		{"0::/cut-her", true, ""},
		{"0::/", false, "/"},
	} {
		if got := unifiedCgroup([]byte(c.in), c.cut); got != c.want {
			t.Errorf("%q: %q, want %q", c.in, got, c.want)
		}
	}
}
