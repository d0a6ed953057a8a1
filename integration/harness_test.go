package integration

import (
	"bytes"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// sandfsBin builds cmd/sandfs once per test binary and returns its path.
func sandfsBin(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sandfs-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "sandfs")
		cmd := exec.Command("go", "build", "-race", "-o", binPath, "sandfs/cmd/sandfs")
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// Daemon is a running `sandfs serve` subprocess.
type Daemon struct {
	URL   string // http://127.0.0.1:PORT
	Root  string // host directory of sandbox "default"
	Token string
	cmd   *exec.Cmd
	log   *syncBuffer
	done  chan error
}

// freeAddr finds a free loopback port.
func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startDaemon runs `sandfs serve --root <tempdir> --listen <free port>` plus
// args, waits until /health answers, and stops it when the test ends. A
// "--root" or "--listen" in args replaces the default one.
func startDaemon(t testing.TB, args ...string) *Daemon {
	t.Helper()
	d := &Daemon{log: &syncBuffer{}, done: make(chan error, 1)}
	joined := " " + strings.Join(args, " ")
	if !strings.Contains(joined, " --root") {
		d.Root = t.TempDir()
		args = append(args, "--root", d.Root)
	}
	addr := ""
	if !strings.Contains(joined, " --listen") {
		addr = freeAddr(t)
		args = append(args, "--listen", addr)
	}
	for i, a := range args {
		if a == "--token" && i+1 < len(args) {
			d.Token = args[i+1]
		}
		if a == "--root" && i+1 < len(args) {
			d.Root = args[i+1]
		}
		if a == "--listen" && i+1 < len(args) {
			addr = args[i+1]
		}
	}
	d.URL = "http://" + addr
	d.cmd = exec.Command(sandfsBin(t), append([]string{"serve"}, args...)...)
	d.cmd.Stdout = d.log
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() { d.Stop(t) })
	if strings.HasPrefix(addr, "unix:") {
		return d // the caller waits on its own socket
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(d.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return d
			}
		}
		select {
		case err := <-d.done:
			d.done <- err
			t.Fatalf("sandfs serve exited before it was ready: %v\n%s", err, d.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandfs serve not ready after 30s:\n%s", d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Stop sends SIGTERM and waits for a clean exit (fails the test otherwise).
// Stopping twice is fine.
func (d *Daemon) Stop(t testing.TB) {
	t.Helper()
	if d.cmd.ProcessState != nil {
		return
	}
	_ = d.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-d.done:
		d.done <- err
		if err != nil {
			t.Errorf("sandfs serve exited with %v after SIGTERM:\n%s", err, d.log)
		}
	case <-time.After(20 * time.Second):
		_ = d.cmd.Process.Kill()
		t.Errorf("sandfs serve did not stop within 20s of SIGTERM:\n%s", d.log)
	}
}

// Log is what the daemon printed so far.
func (d *Daemon) Log() string { return d.log.String() }

// syncBuffer is a bytes.Buffer safe for the subprocess's writers and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
