package integration

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandfs/internal/testenv"
)

// The daemon's token when started the default way (cmd/sandfs/auth.go):
// made in the state directory, 0600, kept; read by the client of the same
// user and by no other local user.

// asNobody runs name with args as the account nobody (uid 65534) with
// env (and PATH), and returns what it printed and its exit status.
func asNobody(t *testing.T, env []string, name string, args ...string) cliResult {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "needs root to run a process as another user")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=/nonexistent", "GORACE=atexit_sleep_ms=0"}, env...)
	cmd.Dir = "/"
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := cliResult{Stdout: stdout.String(), Stderr: stderr.String()}
	if ee, ok := err.(*exec.ExitError); ok && ee.Exited() {
		res.Code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s as nobody: %v\n%s", name, err, res)
	}
	return res
}

// nobodyBin is a copy of the sandfs binary that nobody may run (the build
// lives in a root-only temp dir).
func nobodyBin(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sandfs-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	must(t, os.Chmod(dir, 0o755))
	b, err := os.ReadFile(sandfsBin(t))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "sandfs")
	must(t, os.WriteFile(bin, b, 0o755))
	return bin
}

// TestDefaultDaemonRefusesOtherUsers is the escalation, tried by
// nobody against a daemon (run as root) started the default way: the
// upload of a binary gets 401 from curl and from the sandfs client, the
// token file is out of nobody's reach even when its directory is opened to
// traversal, and nothing is written; the client of the daemon's own user
// reads the token and works.
func TestDefaultDaemonRefusesOtherUsers(t *testing.T) {
	d := startDaemon(t)
	if !d.MadeToken || len(d.Token) != 64 || strings.Trim(d.Token, "0123456789abcdef") != "" {
		t.Fatalf("the default daemon's token: %q, want 64 hex digits made in %s\n%s", d.Token, d.State, d.Log())
	}
	tokenFile := filepath.Join(d.State, "token")
	if st := lstat(t, tokenFile); st.Mode&0o7777 != 0o600 || st.Mode&syscall.S_IFMT != syscall.S_IFREG || int(st.Uid) != os.Geteuid() {
		t.Errorf("token file: mode %o uid %d, want a regular 0600 file of uid %d", st.Mode, st.Uid, os.Geteuid())
	}
	if st := lstat(t, d.State); st.Mode&0o7777 != 0o700 {
		t.Errorf("state directory: mode %o, want 0700", st.Mode&0o7777)
	}
	// The state directory's parents are made traversable, so that the
	// modes of the directory and of the file are what keep nobody out.
	for p := filepath.Dir(d.State); p != "/" && p != filepath.Clean(os.TempDir()); p = filepath.Dir(p) {
		must(t, os.Chmod(p, 0o755))
	}

	t.Run("curl PUT without a token", func(t *testing.T) {
		curl, err := exec.LookPath("curl")
		if err != nil {
			testenv.Skip(t, nil, "no curl: %v", err)
		}
		res := asNobody(t, nil, curl, "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT",
			"--data-binary", "@/usr/bin/id", d.URL+"/v1/fs/file?path=/lpe/id")
		if res.Code != 0 || res.Stdout != "401" {
			t.Errorf("curl as nobody: got %s, want 401", res)
		}
	})
	nb := nobodyBin(t)
	t.Run("sandfs put without a token", func(t *testing.T) {
		res := asNobody(t, []string{"SANDFS_URL=" + d.URL, "SANDFS_STATE=" + d.State}, nb, "put", "/usr/bin/id", "/lpe/id2")
		if res.Code != 3 || !strings.Contains(res.Stderr, "token invalid") || !strings.Contains(res.Stderr, "the daemon wants a token") {
			t.Errorf("sandfs put as nobody: got %s, want exit 3 and the 401's hint", res)
		}
	})
	t.Run("nobody cannot read the token file", func(t *testing.T) {
		if res := asNobody(t, []string{"F=" + tokenFile}, "/bin/sh", "-c", `cat "$F"`); res.Code == 0 || !strings.Contains(res.Stderr, "Permission denied") {
			t.Errorf("cat as nobody: got %s, want permission denied", res)
		}
		// Even with the directory open to traversal, the file's 0600 holds.
		must(t, os.Chmod(d.State, 0o711))
		defer os.Chmod(d.State, 0o700)
		res := asNobody(t, []string{"F=" + tokenFile}, "/bin/sh", "-c", `cat "$F"`)
		if res.Code == 0 || !strings.Contains(res.Stderr, "Permission denied") || strings.Contains(res.Stdout, d.Token) {
			t.Errorf("cat as nobody with the directory 0711: got %s, want permission denied", res)
		}
		res = asNobody(t, []string{"SANDFS_URL=" + d.URL, "SANDFS_STATE=" + d.State}, nb, "ls", "/")
		if res.Code != 3 {
			t.Errorf("sandfs ls as nobody with the directory 0711: got %s, want exit 3", res)
		}
	})
	if _, err := os.Lstat(filepath.Join(d.Root, "lpe")); !os.IsNotExist(err) {
		t.Errorf("nobody's upload left %s/lpe: %v", d.Root, err)
	}
	// The daemon's own user, with no flag: the client reads the token file.
	if res := d.CLI(t, []byte("mine"), "put", "/own.txt"); res.Code != 0 {
		t.Fatalf("put as the daemon's user: %s", res)
	}
	if res := d.CLI(t, nil, "cat", "/own.txt"); res.Code != 0 || res.Stdout != "mine" {
		t.Errorf("cat as the daemon's user: %s", res)
	}
}

// TestTokenKeptAndConsoleURL: the daemon logs the console URL with the
// token in its fragment, the console page it names is served, and a
// restart on the same state directory keeps the token.
func TestTokenKeptAndConsoleURL(t *testing.T) {
	state := t.TempDir()
	d := startDaemon(t, "--state", state)
	want := d.URL + "/ui/#token=" + d.Token
	if !d.LogHas("web console: "+want) || !strings.Contains(d.Log(), "made a new API token") {
		t.Fatalf("the log lacks %q or the new token line:\n%s", want, d.Log())
	}
	res, err := bareClient(d).Get(strings.TrimSuffix(want, "#token="+d.Token))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Contains(page, []byte(`<script type="module" src="main.js"`)) {
		t.Errorf("GET the console URL: %d, want the console page", res.StatusCode)
	}
	first := d.Token
	d.Stop(t)
	d2 := startDaemon(t, "--state", state)
	if d2.Token != first {
		t.Errorf("after a restart the token is %q, want the kept %q", d2.Token, first)
	}
	if strings.Contains(d2.Log(), "made a new API token") {
		t.Errorf("the restarted daemon made a new token:\n%s", d2.Log())
	}
}

// TestTokenFlags: --token works and warns that argv is world-readable;
// --token-file and SANDFS_TOKEN work without the warning and never touch
// the state directory; a given token is never written to the log.
func TestTokenFlags(t *testing.T) {
	dir := t.TempDir()
	tf := filepath.Join(dir, "tok")
	must(t, os.WriteFile(tf, []byte("from-the-file-7c1\n"), 0o600))
	loose := filepath.Join(dir, "loose")
	must(t, os.WriteFile(loose, []byte("loose-token-9a2"), 0o644))
	const argvWarning = "every local user could read (ps, /proc/PID/cmdline)"
	cases := []struct {
		name      string
		args, env []string
		token     string
		logs      []string
		notLogs   []string
	}{
		{"--token", []string{"--token", "argv-token-3f8"}, nil, "argv-token-3f8", []string{argvWarning, "web console (it asks for the token): "}, nil},
		{"--token-file", []string{"--token-file", tf}, nil, "from-the-file-7c1", nil, []string{argvWarning, "may be read by other users"}},
		{"--token-file open to others", []string{"--token-file", loose}, nil, "loose-token-9a2", []string{"may be read by other users"}, []string{argvWarning}},
		{"SANDFS_TOKEN", nil, []string{"SANDFS_TOKEN=env-token-51d"}, "env-token-51d", nil, []string{argvWarning}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemonWith(t, daemonOptions{Env: tc.env}, tc.args...)
			for _, auth := range []struct {
				header string
				want   int
			}{{"", 401}, {"Bearer wrong", 401}, {"Bearer " + tc.token, 200}} {
				req, _ := http.NewRequest("GET", d.URL+"/v1/fs/stat?path=/", nil)
				if auth.header != "" {
					req.Header.Set("Authorization", auth.header)
				}
				res, err := bareClient(d).Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				if res.StatusCode != auth.want {
					t.Errorf("Authorization %q: %d, want %d", auth.header, res.StatusCode, auth.want)
				}
			}
			// A token given on the command line is overwritten there once
			// read: /proc/PID/cmdline, which every local user reads, no
			// longer shows it.
			if cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", d.cmd.Process.Pid)); err != nil {
				t.Fatal(err)
			} else if strings.Contains(string(cmdline), tc.token) {
				t.Errorf("/proc/PID/cmdline shows the token: %q", cmdline)
			}
			log := d.Log()
			for _, s := range tc.logs {
				if !strings.Contains(log, s) {
					t.Errorf("the log lacks %q:\n%s", s, log)
				}
			}
			for _, s := range append(tc.notLogs, tc.token, "#token=") {
				if strings.Contains(log, s) {
					t.Errorf("the log holds %q:\n%s", s, log)
				}
			}
			// The state directory holds the journals (sandboxes/), never a
			// token the daemon was given.
			ents, _ := os.ReadDir(d.State)
			for _, e := range ents {
				if e.Name() != "sandboxes" {
					t.Errorf("a daemon given its token wrote %s to its state directory", e.Name())
				}
			}
		})
	}
}

// TestTokenRefusals: a daemon that cannot trust its state directory or
// token file, or a command line that contradicts itself, exits 1 saying
// why, and changes nothing.
func TestTokenRefusals(t *testing.T) {
	if os.Geteuid() != 0 {
		testenv.Skip(t, nil, "needs root to give files to nobody")
	}
	target := filepath.Join(t.TempDir(), "target")
	must(t, os.WriteFile(target, []byte("not a token\n"), 0o600))
	type setup func(t *testing.T, root, state string) []string
	withState := func(f func(t *testing.T, state string)) setup {
		return func(t *testing.T, root, state string) []string {
			must(t, os.MkdirAll(state, 0o700))
			f(t, state)
			return []string{"--state", state}
		}
	}
	cases := []struct {
		name  string
		setup setup
		want  string
	}{
		{"state inside the root", func(t *testing.T, root, _ string) []string {
			return []string{"--state", filepath.Join(root, ".sandfs")}
		}, "is inside the served root"},
		{"state is the root", func(t *testing.T, root, _ string) []string {
			return []string{"--state", root}
		}, "is inside the served root"},
		{"state inside another sandbox", func(t *testing.T, root, state string) []string {
			other := filepath.Join(filepath.Dir(state), "other")
			must(t, os.MkdirAll(other, 0o755))
			return []string{"--sandbox", "two=" + other, "--state", filepath.Join(other, "st")}
		}, "is inside the served root"},
		{"state through a symlink into the root", func(t *testing.T, root, state string) []string {
			must(t, os.Symlink(root, state))
			return []string{"--state", filepath.Join(state, "st")}
		}, "is inside the served root"},
		{"state directory is a symlink", func(t *testing.T, root, state string) []string {
			real := state + "-real"
			must(t, os.Mkdir(real, 0o700))
			must(t, os.Symlink(real, state))
			return []string{"--state", state}
		}, "is a symlink or not a directory"},
		{"state directory of another user", withState(func(t *testing.T, state string) {
			must(t, os.Chown(state, 65534, 65534))
		}), "owned by uid 65534"},
		{"token file is a symlink", withState(func(t *testing.T, state string) {
			must(t, os.Symlink(target, filepath.Join(state, "token")))
		}), "is a symlink; refusing it"},
		{"token file of another user", withState(func(t *testing.T, state string) {
			must(t, os.WriteFile(filepath.Join(state, "token"), []byte("planted\n"), 0o600))
			must(t, os.Chown(filepath.Join(state, "token"), 65534, 65534))
		}), "is owned by uid 65534"},
		{"token file open to others", withState(func(t *testing.T, state string) {
			must(t, os.WriteFile(filepath.Join(state, "token"), []byte("seen\n"), 0o644))
		}), "others may read it"},
		{"token file is a directory", withState(func(t *testing.T, state string) {
			must(t, os.Mkdir(filepath.Join(state, "token"), 0o700))
		}), "is not a regular file"},
		{"empty token file", withState(func(t *testing.T, state string) {
			must(t, os.WriteFile(filepath.Join(state, "token"), []byte("\n"), 0o600))
		}), "is empty"},
		{"--no-auth and --token", func(t *testing.T, root, state string) []string {
			return []string{"--no-auth", "--token", "x", "--state", state}
		}, "contradict each other"},
		{"--token and --token-file", func(t *testing.T, root, state string) []string {
			return []string{"--token", "x", "--token-file", target, "--state", state}
		}, "give one"},
		{"--token-file missing", func(t *testing.T, root, state string) []string {
			return []string{"--token-file", filepath.Join(root, "none"), "--state", state}
		}, "--token-file: open"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			root := filepath.Join(base, "root")
			must(t, os.Mkdir(root, 0o755))
			args := append([]string{"serve", "--root", root, "--listen", freeAddr(t)}, tc.setup(t, root, filepath.Join(base, "state"))...)
			res := runSandfs(t, nil, nil, args...)
			if res.Code != 1 || !strings.Contains(res.Stderr, tc.want) {
				t.Fatalf("got %s\nwant exit 1 saying %q", res, tc.want)
			}
			if strings.Contains(res.Stderr, "serving sandbox") {
				t.Errorf("the daemon served before refusing:\n%s", res.Stderr)
			}
			if ents, _ := os.ReadDir(root); len(ents) != 0 {
				t.Errorf("the refused daemon wrote %d entries into the root", len(ents))
			}
		})
	}
	if got := readFile(t, target); got != "not a token\n" {
		t.Errorf("the symlink's target was changed: %q", got)
	}
}

// TestStateDirTightened: a state directory of ours that others may enter
// is made 0700 (and the daemon says so) before the token is written.
func TestStateDirTightened(t *testing.T) {
	state := filepath.Join(t.TempDir(), "st")
	must(t, os.Mkdir(state, 0o755))
	must(t, os.Chmod(state, 0o755))
	d := startDaemon(t, "--state", state)
	if st := lstat(t, state); st.Mode&0o7777 != 0o700 {
		t.Errorf("state directory: mode %o, want 0700", st.Mode&0o7777)
	}
	if !strings.Contains(d.Log(), "made it 0700") {
		t.Errorf("the daemon did not say it tightened the directory:\n%s", d.Log())
	}
}

// TestCLIFindsTheToken: with no token flag and no SANDFS_TOKEN the client
// finds the token file where the daemon of the same user put it, through
// each step of the default resolution, for a loopback URL (IP or
// localhost) and a unix socket.
func TestCLIFindsTheToken(t *testing.T) {
	xdg := t.TempDir()
	home := t.TempDir()
	sock := filepath.Join(t.TempDir(), "s.sock")
	cases := []struct {
		name  string
		state string
		args  []string
		env   func(d *Daemon) []string
	}{
		{"$XDG_STATE_HOME/sandfs", filepath.Join(xdg, "sandfs"), nil, func(d *Daemon) []string {
			return []string{"SANDFS_URL=" + d.URL, "XDG_STATE_HOME=" + xdg}
		}},
		{"~/.local/state/sandfs", filepath.Join(home, ".local", "state", "sandfs"), nil, func(d *Daemon) []string {
			return []string{"SANDFS_URL=" + d.URL, "XDG_STATE_HOME=", "HOME=" + home}
		}},
		{"SANDFS_STATE, localhost", filepath.Join(t.TempDir(), "st"), nil, func(d *Daemon) []string {
			return []string{"SANDFS_URL=" + strings.Replace(d.URL, "127.0.0.1", "localhost", 1), "SANDFS_STATE=" + d.State}
		}},
		{"--state over a unix socket", filepath.Join(t.TempDir(), "st"), []string{"--listen", "unix:" + sock}, func(d *Daemon) []string {
			return []string{"SANDFS_URL=unix:" + d.Socket}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := startDaemon(t, append([]string{"--state", tc.state}, tc.args...)...)
			if d.Socket != "" {
				waitSocket(t, d)
			}
			cli := []string{"put", "/found.txt"}
			if strings.HasPrefix(tc.name, "--state") {
				cli = append(cli, "--state", tc.state)
			}
			if res := runSandfs(t, tc.env(d), []byte("with the found token"), cli...); res.Code != 0 {
				t.Fatalf("put: %s\n%s", res, d.Log())
			}
			if got := readFile(t, filepath.Join(d.Root, "found.txt")); got != "with the found token" {
				t.Errorf("got %q", got)
			}
			// Somewhere else, the client has no token: the daemon says 401.
			env := append(tc.env(d), "SANDFS_STATE="+t.TempDir())
			if res := runSandfs(t, env, nil, "ls", "/"); res.Code != 3 || !regexp.MustCompile(`wants a token`).MatchString(res.Stderr) {
				t.Errorf("ls with another state directory: %s, want exit 3 and the hint", res)
			}
		})
	}
}
