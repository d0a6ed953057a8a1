package integration

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestFUSEUnmountedBehind: a mount lazily unmounted behind the daemon's
// back (umount -l) is noticed: the log says it once, /health names the
// mountpoint under "unmounted", the files are still served over HTTP, and
// the daemon then stops at once (no unmount retried against a mount that
// is gone).
func TestFUSEUnmountedBehind(t *testing.T) {
	requireFUSE(t)
	root, mnt := t.TempDir(), filepath.Join(t.TempDir(), "mnt")
	must(t, os.WriteFile(filepath.Join(root, "f.txt"), []byte("kept"), 0o644))
	d := startDaemon(t, "--root", root, "--mount", mnt)
	if b, err := os.ReadFile(filepath.Join(mnt, "f.txt")); err != nil || string(b) != "kept" {
		t.Fatalf("through the mount: %q, %v", b, err)
	}
	if out, err := exec.Command("umount", "-l", mnt).CombinedOutput(); err != nil {
		t.Fatalf("umount -l: %v: %s", err, out)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var h struct {
			Status    string              `json:"status"`
			Unmounted map[string][]string `json:"unmounted"`
		}
		resp, err := http.Get(d.URL + "/health")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
		}
		if len(h.Unmounted["default"]) == 1 && h.Unmounted["default"][0] == mnt {
			if resp.StatusCode != 200 || h.Status != "ok" {
				t.Errorf("/health with the mount gone: %d %q, want 200 ok (the files are served)", resp.StatusCode, h.Status)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health does not name the unmounted mountpoint 30s after umount -l: %+v\n%s", h, d.Log())
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The daemon's log reaches the test through a pipe: wait for the line.
	const said = "unmounted behind the daemon's back"
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(d.Log(), said) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := strings.Count(d.Log(), said); n != 1 {
		t.Errorf("the log says the mount went %d times, want once:\n%s", n, d.Log())
	}
	req, _ := http.NewRequest("GET", d.URL+"/v1/fs/file?path=/f.txt", nil)
	resp, err := d.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("a read over HTTP with the mount gone: %d", resp.StatusCode)
	}
	t0 := time.Now()
	d.Stop(t)
	if strings.Contains(d.Log(), "fuse: unmount") {
		t.Errorf("the stop tried to unmount a mount that was gone (took %v):\n%s", time.Since(t0), d.Log())
	}
}
