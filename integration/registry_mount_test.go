package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// waitMounted waits up to appearWithin for mnt to be (or not be) a mount
// point in this process's view.
func waitMounted(t *testing.T, d *Daemon, mnt string, want bool) {
	t.Helper()
	deadline := time.Now().Add(appearWithin)
	for mounted(t, mnt) != want {
		if time.Now().After(deadline) {
			t.Fatalf("%s mounted=%v after %v, want %v\n%s", mnt, !want, appearWithin, want, d.Log())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestRegistryMountAll: with --mount-all MNTDIR every sandbox is mounted at
// MNTDIR/NAME as it appears, and its mount and mountpoint go with it.
func TestRegistryMountAll(t *testing.T) {
	requireFUSE(t)
	mnt := filepath.Join(t.TempDir(), "mnt")
	d, dir := startRegistry(t, "--mount-all", mnt)
	if !mounted(t, filepath.Join(mnt, "default")) {
		t.Fatalf("the fixed default is not mounted at MNTDIR/default:\n%s", d.Log())
	}
	for _, byHand := range []bool{true, false} {
		name := map[bool]string{true: "hand", false: "api"}[byHand]
		if byHand {
			must(t, os.Mkdir(filepath.Join(dir, name), 0o755))
			waitStatus(t, d, name, 200)
		} else {
			createSandbox(t, d, name)
		}
		at := filepath.Join(mnt, name)
		waitMounted(t, d, at, true)
		if st, b := named(t, d, "", "PUT", name, "/fs/write?path=/hello", []byte("from the API of "+name)); st != 200 {
			t.Fatalf("write: %d %s", st, b)
		}
		wantContent(t, filepath.Join(at, "hello"), "from the API of "+name)
		must(t, os.WriteFile(filepath.Join(at, "back"), []byte("through the mount"), 0o644))
		if st, b := named(t, d, "", "GET", name, "/fs/read?path=/back", nil); st != 200 || string(b) != "through the mount" {
			t.Errorf("a file written on the mount reads %d %q through the API", st, b)
		}
		if byHand {
			must(t, os.RemoveAll(filepath.Join(dir, name)))
		} else if st, b := named(t, d, "", "DELETE", name, "", nil); st/100 != 2 {
			t.Fatalf("DELETE: %d %s", st, b)
		}
		waitStatus(t, d, name, 404)
		waitMounted(t, d, at, false)
		mi, _ := os.ReadFile("/proc/self/mountinfo")
		if strings.Contains(string(mi), at) {
			t.Errorf("%s still in /proc/self/mountinfo", at)
		}
		deadline := time.Now().Add(appearWithin)
		for {
			_, err := os.Lstat(at)
			if os.IsNotExist(err) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("mountpoint %s not removed: %v", at, err)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
