package integration

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sandfs/internal/testenv"
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
	// State is the daemon's --state directory, a temp dir of the test's
	// unless args give one.
	State string
	// MadeToken: the daemon was started the default way (no --token,
	// --token-file, SANDFS_TOKEN, --no-auth or --insecure-no-token), so it
	// made its token in State; the harness read it into Token and this
	// process's HTTP clients send it (authTransport), as a console tab
	// opened from the logged URL would.
	MadeToken bool
	// Socket is the unix socket path of a "--listen unix:PATH" daemon; its
	// URL is then not dialable: use Client and BaseURL.
	Socket string
	cmd    *exec.Cmd
	log    *testenv.Buffer
	done   chan error
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
	return startDaemonWith(t, daemonOptions{}, args...)
}

// daemonOptions change how startDaemonWith runs the daemon.
type daemonOptions struct {
	Dir    string   // working directory of the daemon ("" = the test's)
	NoRoot bool     // add no --root (the daemon uses its default ./sandbox)
	Env    []string // extra KEY=VALUE entries on top of the test's environment
	Bin    string   // the binary to run ("" = the -race build of sandfsBin)
}

// startDaemonWith is startDaemon with options.
func startDaemonWith(t testing.TB, o daemonOptions, args ...string) *Daemon {
	t.Helper()
	d := &Daemon{log: &testenv.Buffer{}, done: make(chan error, 1)}
	joined := " " + strings.Join(args, " ")
	if !o.NoRoot && !strings.Contains(joined, " --root") {
		d.Root = t.TempDir()
		args = append(args, "--root", d.Root)
	}
	if !strings.Contains(joined, " --state") {
		d.State = t.TempDir()
		args = append(args, "--state", d.State)
	}
	d.MadeToken = true
	for _, a := range args {
		switch a {
		case "--token", "--token-file", "--no-auth", "--insecure-no-token":
			d.MadeToken = false
		}
	}
	for _, kv := range o.Env {
		if strings.HasPrefix(kv, "SANDFS_TOKEN=") && kv != "SANDFS_TOKEN=" {
			d.MadeToken = false
		}
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
		if a == "--token-file" && i+1 < len(args) {
			if b, err := os.ReadFile(args[i+1]); err == nil {
				d.Token = strings.TrimSpace(string(b))
			}
		}
		if a == "--root" && i+1 < len(args) {
			d.Root = args[i+1]
		}
		if a == "--listen" && i+1 < len(args) {
			addr = args[i+1]
		}
		if a == "--state" && i+1 < len(args) {
			d.State = args[i+1]
		}
	}
	d.URL = "http://" + addr
	if sock, ok := strings.CutPrefix(addr, "unix:"); ok {
		d.Socket = sock
	}
	bin := o.Bin
	if bin == "" {
		bin = sandfsBin(t)
	}
	d.cmd = exec.Command(bin, append([]string{"serve"}, args...)...)
	d.cmd.Dir = o.Dir
	d.cmd.Env = append(os.Environ(), append([]string{"GOTRACEBACK=all"}, o.Env...)...)
	d.cmd.Stdout = d.log
	d.cmd.Stderr = d.log
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.done <- d.cmd.Wait() }()
	t.Cleanup(func() { d.Stop(t) })
	if strings.HasPrefix(addr, "unix:") {
		d.readToken(t)
		return d // the caller waits on its own socket
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(d.URL + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				d.readToken(t)
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

// readToken reads the token a daemon started the default way made in its
// state directory (it is written before the daemon listens), and lets this
// process's HTTP clients send it to the daemon's address. It waits for the
// file only while the daemon runs.
func (d *Daemon) readToken(t testing.TB) {
	t.Helper()
	if !d.MadeToken {
		return
	}
	file := filepath.Join(d.State, "token")
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := os.ReadFile(file)
		if err == nil && len(b) > 0 {
			d.Token = strings.TrimSpace(string(b))
			break
		}
		if _, exited := d.Wait(0); exited || time.Now().After(deadline) {
			return // the test sees the daemon fail its own way
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d.Socket == "" {
		host := strings.TrimPrefix(d.URL, "http://")
		authHosts.Store(host, d.Token)
		t.Cleanup(func() { authHosts.Delete(host) })
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
		// SIGQUIT makes the Go runtime print every goroutine's stack and
		// exit: the log then says where the stop waits.
		_ = d.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case err := <-d.done:
			d.done <- err
		case <-time.After(10 * time.Second):
			_ = d.cmd.Process.Kill()
		}
		t.Errorf("sandfs serve did not stop within 20s of SIGTERM:\n%s", d.log)
	}
}

// TestMain runs the tests with HTTP clients that know the tokens daemons
// made (authTransport), and with a state directory of their own
// (XDG_STATE_HOME, removed at the end): a daemon or client run without
// --state never reads or writes the user's ~/.local/state/sandfs. The
// caller's SANDFS_TOKEN, SANDFS_STATE and SANDFS_URL are dropped.
func TestMain(m *testing.M) {
	http.DefaultTransport = &authTransport{base: http.DefaultTransport, token: hostToken}
	dir, err := os.MkdirTemp("", "sandfs-test-state-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Setenv("XDG_STATE_HOME", dir)
	// The variables the daemon and the CLI read (cmd/sandfs: auth.go,
	// state.go, flags.go); test knobs (SANDFS_REQUIRE_*, SANDFS_RACE_ROUNDS,
	// an attacker's SANDFS_ATTACK) stay.
	for _, k := range []string{"SANDFS_TOKEN", "SANDFS_STATE", "SANDFS_URL"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// BaseURL is the URL to put in front of a route when using Client.
func (d *Daemon) BaseURL() string {
	if d.Socket != "" {
		return "http://sandfs"
	}
	return d.URL
}

// WaitReady waits until /health answers 200 through Client (startDaemon
// does this itself except for unix sockets).
func (d *Daemon) WaitReady(t testing.TB) {
	t.Helper()
	c := d.Client()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := c.Get(d.BaseURL() + "/health")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		if err, exited := d.Wait(0); exited {
			t.Fatalf("sandfs serve exited before it was ready: %v\n%s", err, d.log)
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandfs serve not ready after 30s:\n%s", d.log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Signal sends sig to the daemon.
func (d *Daemon) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := d.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %v: %v", sig, err)
	}
}

// Wait waits up to timeout for the daemon to exit and returns its exit
// error (nil for status 0) and whether it exited. It can be called again.
func (d *Daemon) Wait(timeout time.Duration) (err error, exited bool) {
	var tc <-chan time.Time
	if timeout > 0 {
		timer := time.NewTimer(timeout)
		defer timer.Stop()
		tc = timer.C
	}
	select {
	case err := <-d.done:
		d.done <- err
		return err, true
	default:
	}
	if tc == nil {
		return nil, false
	}
	select {
	case err := <-d.done:
		d.done <- err
		return err, true
	case <-tc:
		return nil, false
	}
}
