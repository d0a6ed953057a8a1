package main

// The sandfs daemon under test: started on a fresh root and mountpoint,
// waited for, unmounted and stopped.

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// runMounted starts the daemon on a fresh root beside the oracle, mounted
// at a fresh mountpoint, runs the suite inside the mount, then unmounts and
// stops the daemon.
func runMounted(ctx context.Context, c config, groups []string, work string) (map[string]*fileResult, error) {
	root, mnt, state := filepath.Join(work, "sandbox"), filepath.Join(work, "mnt"), filepath.Join(work, "state")
	for _, d := range []struct {
		p    string
		mode fs.FileMode
	}{{root, 0o755}, {mnt, 0o755}, {state, 0o700}} {
		if err := os.Mkdir(d.p, d.mode); err != nil {
			return nil, err
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.logs, "daemon.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := append([]string{"serve", "--root", root, "--mount", mnt, "--state", state, "--listen", addr}, c.args...)
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	logf("%s %s (log: %s)", c.bin, strings.Join(args, " "), logPath)
	stopped := false
	stopDaemon := func() error {
		if stopped {
			return nil
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		var err error
		select {
		case err = <-done:
			if err != nil {
				err = fmt.Errorf("sandfs serve exited with %v after SIGTERM (log: %s)", err, logPath)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			err = fmt.Errorf("sandfs serve did not stop within 20s of SIGTERM (log: %s)", logPath)
		}
		if mounted(mnt) {
			out, uerr := exec.Command("fusermount3", "-u", "-z", mnt).CombinedOutput()
			if err == nil {
				err = fmt.Errorf("%s still mounted after the daemon stopped (fusermount3 -u -z: %v %s)", mnt, uerr, bytes.TrimSpace(out))
			}
		}
		return err
	}
	defer stopDaemon()

	deadline := time.Now().Add(30 * time.Second)
	for {
		if mounted(mnt) && healthy(addr) {
			break
		}
		select {
		case err := <-done:
			stopped = true
			return nil, fmt.Errorf("sandfs serve exited before the mount was up: %v (log: %s)", err, logPath)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s not mounted within 30s (log: %s)", mnt, logPath)
		}
	}
	res, err := runSuite(ctx, c, groups, mnt, "mount")
	if serr := stopDaemon(); err == nil {
		err = serr
	}
	return res, err
}

func healthy(addr string) bool {
	cl := http.Client{Timeout: time.Second}
	resp, err := cl.Get("http://" + addr + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// mounted reports whether mnt is a mount point.
func mounted(mnt string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == mnt {
			return true
		}
	}
	return false
}
