package integration

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"sandfs/fusefs"
)

// killRounds is how many times TestFUSEKillWhileNotifying kills a daemon.
const killRounds = 4

// TestFUSEKillWhileNotifying: a daemon killed with SIGKILL while processes
// create and remove files through its mount and an outside writer changes
// the same directory (so the daemon is sending the kernel notifications
// that wait for that directory's lock) dies, and the processes using the
// mount get an error instead of hanging. Without the reaper (fusefs
// reaper.go) a thread waiting for the lock could keep the daemon a zombie
// holding its connection for ever.
func TestFUSEKillWhileNotifying(t *testing.T) {
	for round := range killRounds {
		t.Run(fmt.Sprint(round), func(t *testing.T) { killWhileNotifying(t) })
		if t.Failed() {
			return
		}
	}
}

func killWhileNotifying(t *testing.T) {
	d, mnt := startMirror(t)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	ops := 0
	work := func(dir, tag string) {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if churn(dir, fmt.Sprintf("%s%d", tag, i), nil) != nil && dir == mnt {
				return // the daemon is gone
			}
			mu.Lock()
			ops++
			mu.Unlock()
		}
	}
	wg.Add(3)
	go work(mnt, "m0-")
	go work(mnt, "m1-")
	go work(d.Root, "o-")
	if !waitFor(30*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return ops >= 200 }) {
		t.Fatalf("the writers did not start: %d operations", ops)
	}
	must(t, d.cmd.Process.Kill())
	_, exited := d.Wait(20 * time.Second)
	if !exited {
		t.Errorf("the daemon did not die within 20s of SIGKILL\n== daemon kernel stacks\n%s== this process's\n%s",
			kernelStacks(d.cmd.Process.Pid), kernelStacks(os.Getpid()))
		if err := fusefs.AbortMount(mnt); err != nil {
			t.Errorf("abort: %v", err)
		}
	}
	close(stop)
	ended := make(chan struct{})
	go func() { wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-time.After(20 * time.Second):
		t.Errorf("the writers on the mount did not end within 20s of the daemon's death\n%s", kernelStacks(os.Getpid()))
		_ = fusefs.AbortMount(mnt)
		<-ended
	}
	// The mount is dead: stat says so at once, and it can be cleared.
	_, err := os.Stat(filepath.Join(mnt, "x"))
	if err == nil || errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat on the dead mount: %v, want ENOTCONN or ECONNABORTED", err)
	}
	if strings.Contains(d.Log(), "aborted its FUSE connection") {
		t.Logf("the reaper aborted the connection (%d operations before the kill)", ops)
	}
	if out, err := exec.Command("fusermount3", "-u", "-z", mnt).CombinedOutput(); err != nil {
		t.Errorf("fusermount3 -u -z: %v: %s", err, out)
	}
}
