package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// proc is a server this harness started: killed by its pid on stop.
type proc struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	mnt    string // FUSE mountpoint, if any
	state  string // a state directory made for it (stateDir): removed when it stops
	host   string // its --events-host, if any
	mu     sync.Mutex
	stderr bytes.Buffer
	lines  chan string // stderr lines, for waiting on a log message
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
	if p.mnt != "" && isMount(p.mnt) {
		exec.Command("fusermount3", "-u", p.mnt).Run()
	}
	if p.state != "" {
		os.RemoveAll(p.state) // a fleet's checkpoint stores hold gigabytes
	}
}

// waitLog waits until a stderr line contains s.
func (p *proc) waitLog(s string, limit time.Duration) error {
	t := time.After(limit)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				return fmt.Errorf("exited before logging %q", s)
			}
			if strings.Contains(l, s) {
				return nil
			}
		case <-t:
			return fmt.Errorf("no %q logged within %v", s, limit)
		}
	}
}

func freePort() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startProc runs name args, its stderr read line by line, and waits until
// GET base+ready answers (ready "" waits for nothing).
func startProc(dir, addr, ready string, name string, args ...string) (*proc, error) {
	p := &proc{cmd: exec.Command(name, args...), base: "http://" + addr, lines: make(chan string, 1<<16)}
	p.cmd.Dir = dir
	errp, err := p.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout = nil
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(errp)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		close(p.lines)
	}()
	if ready == "" {
		return p, nil
	}
	if err := waitHTTP(p.base+ready, 30*time.Second); err != nil {
		p.stop()
		p.mu.Lock()
		defer p.mu.Unlock()
		return nil, fmt.Errorf("%s: %v; stderr: %s", name, err, tail(p.stderr.String()))
	}
	return p, nil
}

func tail(s string) string {
	if len(s) > 800 {
		return s[len(s)-800:]
	}
	return s
}

func waitHTTP(url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		r, err := http.Get(url)
		if err == nil {
			r.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// startSandfs runs `sandfs serve --root root --no-auth` plus args on a free
// port: with no token, as the sandbox-agent it is compared with runs; with
// a state directory of its own, so daemons side by side never share a
// journal.
func startSandfs(c *cfg, root string, args ...string) (*proc, error) {
	return startSandfsIn(c, c.work, root, args...)
}

// startSandfsIn is startSandfs with its state directory made under base:
// a bench whose anchor runs on tmpfs keeps the daemon's state there too,
// so both sides write the same kind of filesystem.
func startSandfsIn(c *cfg, base, root string, args ...string) (*proc, error) {
	addr := freePort()
	st := stateDirIn(base)
	return withState(st)(startProc("", addr, "/health", c.bin, append([]string{"serve", "--root", root, "--listen", addr, "--no-auth", "--state", st}, args...)...))
}

// withState has the process just started remove the state directory st
// when it stops (st removed at once when it did not start).
func withState(st string) func(*proc, error) (*proc, error) {
	return func(p *proc, err error) (*proc, error) {
		if err != nil {
			os.RemoveAll(st)
			return nil, err
		}
		p.state = st
		return p, nil
	}
}

// stateDir is a fresh state directory under the work directory.
func stateDir(c *cfg) string { return stateDirIn(c.work) }

// stateDirIn is a fresh state directory under base.
func stateDirIn(base string) string {
	d, err := os.MkdirTemp(base, "state-")
	if err != nil {
		return filepath.Join(base, "state")
	}
	return d
}

// startMount runs sandfs serving root with its FUSE mirror at mnt, and
// waits for the mount.
func startMount(c *cfg, root, mnt string, args ...string) (*proc, error) {
	os.MkdirAll(mnt, 0o755)
	return mounted(mnt)(startSandfs(c, root, append([]string{"--mount", mnt}, args...)...))
}

// mounted waits for the mount at mnt of a process just started, and stops
// it if the mount never comes.
func mounted(mnt string) func(*proc, error) (*proc, error) {
	return func(p *proc, err error) (*proc, error) {
		if err != nil {
			return nil, err
		}
		p.mnt = mnt
		if err := waitMount(mnt); err != nil {
			p.stop()
			return nil, err
		}
		return p, nil
	}
}

func waitMount(mnt string) error {
	for i := 0; i < 600; i++ {
		if isMount(mnt) {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s never mounted", mnt)
}

func isMount(p string) bool {
	b, _ := os.ReadFile("/proc/self/mountinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == p {
			return true
		}
	}
	return false
}

// startLoopback mounts go-fuse's loopback example of root at mnt, with its
// flags before the two paths.
func startLoopback(c *cfg, root, mnt string, flags ...string) (*proc, error) {
	os.MkdirAll(mnt, 0o755)
	return mounted(mnt)(startProc("", "", "", filepath.Join(c.cache, "loopback"), append(append([]string{"-q"}, flags...), mnt, root)...))
}

// startNginx serves root with nginx (sendfile on, one worker).
func startNginx(c *cfg, root string) (*proc, error) {
	dir := filepath.Join(c.work, "nginx")
	os.MkdirAll(dir, 0o755)
	addr := freePort()
	conf := fmt.Sprintf(`user root;
worker_processes 1;
daemon off;
pid %s/nginx.pid;
error_log stderr;
events { worker_connections 256; }
http {
	access_log off;
	sendfile on;
	server { listen %s; root %s; location / { } }
}
`, dir, addr, root)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		return nil, err
	}
	return startProc("", addr, "/", "nginx", "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
}

// startAgent runs the sandbox-agent server (no token, no telemetry) on a
// free loopback port; its relative paths are taken against $HOME, so the
// harness always sends absolute ones.
func startAgent(c *cfg) (*proc, error) {
	addr := freePort()
	host, port, _ := net.SplitHostPort(addr)
	return startProc(c.work, addr, "/v1/health", agentBin(c), "--no-token", "server", "--no-telemetry", "--host", host, "--port", port)
}

func agentBin(c *cfg) string {
	return filepath.Join(c.cache, "agent", "node_modules", "@sandbox-agent", "cli-linux-x64", "bin", "sandbox-agent")
}

// rssHWM resets the peak RSS of pid (clear_refs 5) when reset, and returns
// VmHWM in MiB.
func rssHWM(pid int, reset bool) float64 {
	if reset {
		os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
	}
	return procStatus(pid, "VmHWM")
}

func procStatus(pid int, key string) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == key+":" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// ---- anchors ------------------------------------------------------------------

var aptOnce sync.Once

// needApt installs the Debian package pkg when cmd is missing.
func needApt(cmd, pkg string) error {
	if _, err := exec.LookPath(cmd); err == nil {
		return nil
	}
	logf("%s missing: apt-get install %s", cmd, pkg)
	aptOnce.Do(func() { exec.Command("apt-get", "update", "-q").Run() })
	out, err := exec.Command("apt-get", "install", "-y", "-q", pkg).CombinedOutput()
	if err != nil {
		return fmt.Errorf("apt-get install %s: %v: %s", pkg, err, tail(string(out)))
	}
	if pkg == "nginx-light" {
		// The package starts the system's nginx on port 80: not ours.
		exec.Command("systemctl", "stop", "nginx").Run()
	}
	return nil
}

// needLoopback builds go-fuse's loopback example at the version of go.mod.
func needLoopback(c *cfg) error {
	bin := filepath.Join(c.cache, "loopback")
	if _, err := os.Stat(bin); err == nil {
		return nil
	}
	cmd := exec.Command("go", "build", "-o", bin, "github.com/hanwen/go-fuse/v2/example/loopback")
	cmd.Dir = c.repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build loopback: %v: %s", err, out)
	}
	return nil
}

// needAgent installs @sandbox-agent/cli-linux-x64 at the version the SDK
// check of integration/testdata/sdk pins.
func needAgent(c *cfg) error {
	if _, err := os.Stat(agentBin(c)); err == nil {
		return nil
	}
	ver := "0.4.2"
	if b, err := os.ReadFile(filepath.Join(c.repo, "integration", "testdata", "sdk", "package.json")); err == nil {
		var pj struct {
			Dependencies map[string]string `json:"dependencies"`
		}
		if json.Unmarshal(b, &pj) == nil && pj.Dependencies["sandbox-agent"] != "" {
			ver = strings.TrimLeft(pj.Dependencies["sandbox-agent"], "^~=")
		}
	}
	dir := filepath.Join(c.cache, "agent")
	os.MkdirAll(dir, 0o755)
	cmd := exec.Command("npm", "install", "--no-audit", "--no-fund", "--prefix", dir, "@sandbox-agent/cli-linux-x64@"+ver)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm install sandbox-agent %s: %v: %s", ver, err, tail(string(out)))
	}
	return os.Chmod(agentBin(c), 0o755)
}
