package integration

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The life cycle of `sandfs serve`: signals, unix sockets, its root.

// TestServeSignalDrains: SIGTERM or SIGINT lets a request in flight finish,
// then the daemon exits 0 promptly.
func TestServeSignalDrains(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			d := startDaemon(t)
			pr, pw := io.Pipe()
			req, err := http.NewRequest("PUT", d.URL+"/v1/fs/file?path=/slow.txt", pr)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/octet-stream")
			type answer struct {
				status int
				err    error
			}
			answered := make(chan answer, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					answered <- answer{err: err}
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				answered <- answer{status: resp.StatusCode}
			}()
			if _, err := pw.Write([]byte("first half, ")); err != nil {
				t.Fatal(err)
			}
			time.Sleep(300 * time.Millisecond) // the daemon is inside the handler now
			d.Signal(t, sig)
			time.Sleep(300 * time.Millisecond)
			if err, exited := d.Wait(0); exited {
				t.Fatalf("the daemon exited (%v) with a request in flight:\n%s", err, d.Log())
			}
			if _, err := pw.Write([]byte("second half")); err != nil {
				t.Fatal(err)
			}
			pw.Close()
			select {
			case a := <-answered:
				if a.err != nil || a.status != 200 {
					t.Fatalf("the request in flight: got status %d err %v, want 200\n%s", a.status, a.err, d.Log())
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("the request in flight got no answer\n%s", d.Log())
			}
			start := time.Now()
			err, exited := d.Wait(5 * time.Second)
			if !exited {
				t.Fatalf("still running 5s after the request finished:\n%s", d.Log())
			}
			if err != nil {
				t.Fatalf("got exit %v, want status 0:\n%s", err, d.Log())
			}
			t.Logf("exited %v after the last answer", time.Since(start))
			if got := readFile(t, filepath.Join(d.Root, "slow.txt")); got != "first half, second half" {
				t.Errorf("got %q, want the whole body", got)
			}
		})
	}
}

// TestServeSignalIdle: an idle daemon exits 0 promptly after a signal. The
// binary is built with -race, whose runtime sleeps a second at exit
// (GORACE atexit_sleep_ms), hence 3 seconds.
func TestServeSignalIdle(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			d := startDaemon(t)
			// An idle keep-alive connection must not hold the exit up.
			resp, err := http.Get(d.URL + "/health")
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			start := time.Now()
			d.Signal(t, sig)
			err, exited := d.Wait(3 * time.Second)
			if !exited {
				t.Fatalf("still running 3s after %v:\n%s", sig, d.Log())
			}
			if err != nil {
				t.Fatalf("got exit %v, want status 0:\n%s", err, d.Log())
			}
			t.Logf("exited %v after %v", time.Since(start), sig)
		})
	}
}

// TestServeUnixSocket: --listen unix:PATH serves HTTP on the socket, the
// client verbs reach it, and the socket file is gone after exit.
func TestServeUnixSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "x.sock")
	d := startDaemon(t, "--listen", "unix:"+sock)
	d.WaitReady(t)
	if fi, err := os.Lstat(sock); err != nil || fi.Mode().Type() != os.ModeSocket {
		t.Fatalf("got %v, %v; want a socket at %s", fi, err, sock)
	}
	if !strings.Contains(d.Log(), "on unix:"+sock) {
		t.Errorf("the log does not name the socket:\n%s", d.Log())
	}

	req, _ := http.NewRequest("PUT", d.BaseURL()+"/v1/fs/file?path=/over-unix.txt", strings.NewReader("via the socket"))
	resp, err := d.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT over the socket: got %d, want 200", resp.StatusCode)
	}
	if got := readFile(t, filepath.Join(d.Root, "over-unix.txt")); got != "via the socket" {
		t.Errorf("got %q", got)
	}
	if res := d.CLI(t, nil, "cat", "/over-unix.txt"); res.Code != 0 || res.Stdout != "via the socket" {
		t.Errorf("sandfs cat with SANDFS_URL=unix:%s: %s", sock, res)
	}

	d.Stop(t)
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("socket file after exit: got %v, want it removed", err)
	}
}

// TestServeStaleSocket: a socket file nobody listens on (a killed daemon's)
// is replaced.
func TestServeStaleSocket(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "stale.sock")
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	l.(*net.UnixListener).SetUnlinkOnClose(false)
	l.Close()
	if _, err := os.Lstat(sock); err != nil {
		t.Fatalf("the stale socket should exist: %v", err)
	}
	d := startDaemon(t, "--listen", "unix:"+sock)
	d.WaitReady(t)
	d.Stop(t)
	if _, err := os.Lstat(sock); !os.IsNotExist(err) {
		t.Errorf("socket file after exit: got %v, want it removed", err)
	}
}

// TestServeDefaultRoot: with no --root the daemon serves ./sandbox, created.
func TestServeDefaultRoot(t *testing.T) {
	dir := t.TempDir()
	d := startDaemonWith(t, daemonOptions{Dir: dir, NoRoot: true})
	d.Root = filepath.Join(dir, "sandbox")
	if fi, err := os.Stat(d.Root); err != nil || !fi.IsDir() {
		t.Fatalf("got %v, %v; want ./sandbox created", fi, err)
	}
	if res := d.CLI(t, []byte("in the default root"), "put", "/f.txt"); res.Code != 0 {
		t.Fatalf("put: %s", res)
	}
	if got := readFile(t, filepath.Join(d.Root, "f.txt")); got != "in the default root" {
		t.Errorf("got %q", got)
	}
	if !d.LogHas("serving sandbox default (") || !d.LogHas("sandbox) on 127.0.0.1:") {
		t.Errorf("the start line does not name the root and address:\n%s", d.Log())
	}
}

// TestServeFailsToStart: a daemon that cannot serve says why and exits 1.
func TestServeFailsToStart(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"root is a file", []string{"--root", file, "--listen", freeAddr(t)}, "sandbox root " + file + " is not a directory"},
		{"address in use", []string{"--root", dir, "--listen", busy.Addr().String()}, "address already in use"},
		{"socket path is a regular file", []string{"--root", dir, "--listen", "unix:" + file}, "is not a socket"},
		{"unknown flag", []string{"--root", dir, "--bogus"}, "flag provided but not defined: -bogus"},
		{"bad size", []string{"--root", dir, "--max-json-body", "lots"}, "not a size"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := runSandfs(t, nil, nil, append([]string{"serve"}, tc.args...)...)
			if res.Code != 1 {
				t.Fatalf("got exit %d, want 1\n%s", res.Code, res)
			}
			if !strings.Contains(res.Stderr, tc.want) {
				t.Errorf("got stderr %q, want it to say %q", res.Stderr, tc.want)
			}
		})
	}
	if got := readFile(t, file); got != "x" {
		t.Errorf("the file was changed: %q", got)
	}
}

// TestServeWarnsWithoutToken: --no-auth is refused on a non-loopback
// address unless --insecure-no-token says so too, and then warns;
// --insecure-no-token alone keeps its old sense (no token). A daemon given
// no token flag at all makes one, and serves beyond loopback with it. On
// loopback or a unix socket --no-auth serves without a word.
func TestServeWarnsWithoutToken(t *testing.T) {
	port := func() string {
		_, p, _ := net.SplitHostPort(freeAddr(t))
		return p
	}
	for _, addr := range []string{"0.0.0.0:0", ":" + port(), "[::]:0"} {
		t.Run("refused --no-auth "+addr, func(t *testing.T) {
			state := t.TempDir()
			res := runSandfs(t, nil, nil, "serve", "--root", t.TempDir(), "--listen", addr, "--no-auth", "--state", state)
			if res.Code != 1 {
				t.Fatalf("got exit %d, want 1\n%s", res.Code, res)
			}
			if !strings.Contains(res.Stderr, "refusing to listen on "+addr+" without a token") ||
				!strings.Contains(res.Stderr, "--insecure-no-token") {
				t.Errorf("stderr does not say why nor what to do: %q", res.Stderr)
			}
			if ents, _ := os.ReadDir(state); len(ents) != 0 {
				t.Errorf("a refused daemon left %d files in its state directory", len(ents))
			}
		})
	}
	t.Run("refused --no-auth with an empty SANDFS_TOKEN", func(t *testing.T) {
		res := runSandfs(t, []string{"SANDFS_TOKEN="}, nil, "serve", "--root", t.TempDir(), "--listen", "0.0.0.0:0", "--no-auth")
		if res.Code != 1 || !strings.Contains(res.Stderr, "without a token") {
			t.Fatalf("got exit %d, want 1 and the refusal\n%s", res.Code, res)
		}
	})
	sock := filepath.Join(t.TempDir(), "s.sock")
	sock2 := filepath.Join(t.TempDir(), "s.sock")
	cases := []struct {
		name   string
		args   []string
		warn   bool
		status int // of an untokened GET /v1/fs/stat
	}{
		{"all interfaces --no-auth --insecure-no-token, told", []string{"--listen", "0.0.0.0:" + port(), "--no-auth", "--insecure-no-token"}, true, 200},
		{"all interfaces --insecure-no-token alone, told", []string{"--listen", "0.0.0.0:" + port(), "--insecure-no-token"}, true, 200},
		{"all interfaces with a token", []string{"--listen", "0.0.0.0:" + port(), "--token", "t"}, false, 401},
		{"all interfaces, no token flag: a made token", []string{"--listen", "0.0.0.0:" + port()}, false, 401},
		{"loopback --no-auth", []string{"--no-auth"}, false, 200},
		{"loopback, no token flag: a made token", nil, false, 401},
		{"unix socket --no-auth", []string{"--listen", "unix:" + sock, "--no-auth"}, false, 200},
		{"unix socket, no token flag: a made token", []string{"--listen", "unix:" + sock2}, false, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, tc.args...)
			if d.Socket != "" {
				waitSocket(t, d)
			}
			res, err := bareClient(d).Get(d.BaseURL() + "/v1/fs/stat?path=/")
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != tc.status {
				t.Errorf("GET /v1/fs/stat with no token: %d, want %d", res.StatusCode, tc.status)
			}
			if tc.status == 401 {
				req, _ := http.NewRequest("GET", d.BaseURL()+"/v1/fs/stat?path=/", nil)
				req.Header.Set("Authorization", "Bearer "+d.Token)
				res, err := bareClient(d).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != 200 {
					t.Errorf("GET /v1/fs/stat with the token: %d, want 200", res.StatusCode)
				}
			}
			d.Stop(t)
			if got := strings.Contains(d.Log(), "no token set"); got != tc.warn {
				t.Errorf("warning logged: got %v, want %v\n%s", got, tc.warn, d.Log())
			}
		})
	}
}

// waitSocket waits until a unix-socket daemon answers /health.
func waitSocket(t *testing.T, d *Daemon) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := d.Client().Get(d.BaseURL() + "/health")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon on %s not ready:\n%s", d.Socket, d.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
