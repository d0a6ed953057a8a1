package main

import (
	"archive/tar"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/internal/testenv"
	"sandfs/rest"

	"golang.org/x/sys/unix"
)

// cliDaemon is a real rest server in-process over two sandboxes, default
// and "other", each on its own t.TempDir().
type cliDaemon struct {
	url, root, other string
	wrap             func(http.Handler) http.Handler // set before the first request
}

func newCLIDaemon(t *testing.T) *cliDaemon { return newCLIDaemonToken(t, "") }

func newCLIDaemonToken(t *testing.T, token string) *cliDaemon {
	t.Helper()
	d := &cliDaemon{root: t.TempDir(), other: t.TempDir()}
	sbs := map[string]*core.Sandbox{}
	for name, dir := range map[string]string{"default": d.root, "other": d.other} {
		sb, err := core.Open(name, dir, core.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		sbs[name] = sb
	}
	srv, err := rest.New(rest.Config{Sandboxes: sbs, Token: token, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if d.wrap != nil {
			d.wrap(h).ServeHTTP(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	d.url = ts.URL
	return d
}

// cli runs one command line against d; it returns stdout, stderr and the
// exit status.
func (d *cliDaemon) cli(t *testing.T, stdin string, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	full := append([]string{args[0], "--server", d.url, "--token", "x"}, args[1:]...)
	err := run(ctx, full, strings.NewReader(stdin), &stdout, &stderr)
	code := report(err, &stderr)
	return stdout.String(), stderr.String(), code
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestSplitShortFlags(t *testing.T) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.Bool("r", false, "")
	fs.Bool("f", false, "")
	fs.Int("C", 0, "")
	for _, tc := range []struct{ in, want []string }{
		{[]string{"-rf", "/a"}, []string{"-r", "-f", "/a"}},
		{[]string{"/a", "-fr"}, []string{"/a", "-f", "-r"}},
		{[]string{"-rC", "3"}, []string{"-rC", "3"}}, // C takes a value: left alone
		{[]string{"-rx"}, []string{"-rx"}},           // x unknown: the flag package says so
		{[]string{"--rf", "-", "-r"}, []string{"--rf", "-", "-r"}},
		{[]string{"--", "-rf"}, []string{"--", "-rf"}},
	} {
		if got := splitShortFlags(fs, tc.in); !slices.Equal(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestUnixHabits: the flags a coreutils user types, and what each does
// to the tree.
func TestUnixHabits(t *testing.T) {
	d := newCLIDaemon(t)
	writeFiles(t, d.root, map[string]string{
		"tree/a/b/c.txt": "c", "tree/.hidden": "h", "tree/f.txt": "one\ntwo\nthree\nfour\n",
		"gone/x": "x", "dst/keep": "k", "日本語.txt": "wide", "a.txt": "narrow", "m.txt": "m",
	})
	if err := os.Symlink("f.txt", filepath.Join(d.root, "tree/link")); err != nil {
		t.Fatal(err)
	}
	exists := func(p string) bool { _, err := os.Lstat(filepath.Join(d.root, p)); return err == nil }
	cases := []struct {
		args   []string
		code   int
		stdout string         // exact, unless re
		re     *regexp.Regexp // stdout matches
		stderr string         // contained
		check  func() bool
	}{
		{args: []string{"rm", "-rf", "/gone"}, check: func() bool { return !exists("gone") }},
		{args: []string{"rm", "-f", "/never"}},
		{args: []string{"rm", "-rf", "/never", "/dst/keep"}, check: func() bool { return !exists("dst/keep") }},
		{args: []string{"rm", "/never"}, code: 2},
		{args: []string{"rm", "-R", "/nope"}, code: 2},
		{args: []string{"mkdir", "-p", "/m/n/o"}, check: func() bool { return exists("m/n/o") }},
		{args: []string{"ls", "/tree"}, stdout: "a\nf.txt\nlink\n"},
		{args: []string{"ls", "-a", "/tree"}, stdout: ".hidden\na\nf.txt\nlink\n"},
		{args: []string{"ls", "-la", "/tree"}, re: regexp.MustCompile(`^-rw-r--r-- +1 \d{4}-\d\d-\d\d \d\d:\d\d:\d\d \.hidden\n` +
			`drwxr-xr-x +\d+ [-0-9: ]{19} a\n-rw-r--r-- +19 [-0-9: ]{19} f\.txt\nl[-rwx]{9} +5 [-0-9: ]{19} link -> f\.txt\n$`)},
		{args: []string{"ls", "/tree/f.txt"}, stdout: "/tree/f.txt\n"},
		{args: []string{"ls", "-l", "tree/link"}, re: regexp.MustCompile(`^l[-rwx]{9} 5 [-0-9: ]{19} tree/link -> f\.txt\n$`)},
		{args: []string{"stat", "/tree/link"}, re: regexp.MustCompile(`(?s)type: symlink\ntarget: f\.txt\n.*modified: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\n$`)},
		{args: []string{"cp", "-r", "/tree/a", "/copied"}, check: func() bool { return exists("copied/b/c.txt") }},
		{args: []string{"cp", "-R", "/tree/a", "/dst"}, check: func() bool { return exists("dst/a/b/c.txt") }},
		{args: []string{"cp", "/tree/f.txt", "/dst"}, check: func() bool { return exists("dst/f.txt") }},
		{args: []string{"cp", "/tree/f.txt", "/dst"}, code: 3, stderr: "/dst/f.txt exists (-f replaces it)"},
		{args: []string{"cp", "-f", "/tree/f.txt", "/dst"}},
		{args: []string{"cp", "/tree/a", "/nodir"}, code: 3, stderr: "-r not given", check: func() bool { return !exists("nodir") }},
		// mv as coreutils: into an existing directory; --overwrite replaces
		// as rename(2) does, never a non-empty directory.
		{args: []string{"mv", "/copied", "/dst"}, check: func() bool { return exists("dst/copied/b/c.txt") && !exists("copied") }},
		{args: []string{"mv", "/m.txt", "/dst/f.txt"}, code: 3, stderr: "/dst/f.txt", check: func() bool { return exists("m.txt") }},
		{args: []string{"mv", "--overwrite", "/m.txt", "/dst/f.txt"}, check: func() bool { return !exists("m.txt") && exists("dst/f.txt") }},
		{args: []string{"mkdir", "-p", "/full/a"}},
		{args: []string{"mv", "--overwrite", "/tree/a", "/full/a"}, check: func() bool { return exists("full/a/a/b/c.txt") }},
		{args: []string{"mkdir", "-p", "/x/sub/keep"}},
		{args: []string{"mkdir", "-p", "/y/sub"}},
		{args: []string{"mv", "--overwrite", "/y/sub", "/x"}, code: 3, stderr: "not empty", check: func() bool { return exists("x/sub/keep") && exists("y/sub") }},
		{args: []string{"grep", "-n", "three", "/tree"}, stdout: "/tree/f.txt:3:three\n"},
		{args: []string{"grep", "-C", "1", "three", "/tree/f.txt"}, stdout: "/tree/f.txt-2-two\n/tree/f.txt:3:three\n/tree/f.txt-4-four\n"},
		{args: []string{"grep", "-A", "1", "-B", "0", "one", "/tree/f.txt"}, stdout: "/tree/f.txt:1:one\n/tree/f.txt-2-two\n"},
	}
	for _, tc := range cases {
		out, errOut, code := d.cli(t, "", tc.args...)
		bad := code != tc.code || !strings.Contains(errOut, tc.stderr) || (tc.check != nil && !tc.check())
		if tc.re != nil {
			bad = bad || !tc.re.MatchString(out)
		} else if tc.code == 0 {
			bad = bad || out != tc.stdout
		}
		if bad {
			t.Errorf("%q: exit %d (want %d)\nstdout %q (want %q %v)\nstderr %q (want %q)", tc.args, code, tc.code, out, tc.stdout, tc.re, errOut, tc.stderr)
		}
	}
	// Wide names: the name is the last column, so what comes before it
	// is as wide in every line, whatever the name's display width.
	out, _, _ := d.cli(t, "", "ls", "-l", "/")
	var starts []int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasSuffix(line, "a.txt") || strings.HasSuffix(line, "日本語.txt") {
			starts = append(starts, strings.LastIndex(line, " ")+1)
		}
	}
	if len(starts) != 2 || starts[0] != starts[1] {
		t.Errorf("name columns at %v in\n%s", starts, out)
	}
}

// TestSandboxFlag: --sandbox and SANDFS_SANDBOX send every verb to the
// named family of that sandbox; verbs with no named route refuse.
func TestSandboxFlag(t *testing.T) {
	d := newCLIDaemon(t)
	writeFiles(t, d.other, map[string]string{"o.txt": "other", "dir/x": "x"})
	writeFiles(t, d.root, map[string]string{"o.txt": "default"})
	in := func(p string) string { b, _ := os.ReadFile(filepath.Join(d.other, p)); return string(b) }
	mode := func(p string) os.FileMode { fi, _ := os.Lstat(filepath.Join(d.other, p)); return fi.Mode().Perm() }
	cases := []struct {
		args   []string
		stdin  string
		code   int
		stdout string
		stderr string
		check  func() bool
	}{
		{args: []string{"cat", "/o.txt"}, stdout: "other"},
		{args: []string{"ls", "/"}, stdout: "dir\no.txt\n"},
		{args: []string{"put", "-", "/new.txt"}, stdin: "new", check: func() bool { return in("new.txt") == "new" }},
		{args: []string{"put", "/deep/er.txt"}, stdin: "deep", check: func() bool { return in("deep/er.txt") == "deep" }},
		{args: []string{"mv", "/new.txt", "/o.txt"}, code: 3, stderr: "/o.txt exists (--overwrite replaces it)", check: func() bool { return in("o.txt") == "other" }},
		{args: []string{"mv", "/new.txt", "/moved.txt"}, check: func() bool { return in("moved.txt") == "new" }},
		{args: []string{"cp", "/moved.txt", "/dir"}, check: func() bool { return in("dir/moved.txt") == "new" }},
		{args: []string{"cp", "-r", "/dir", "/dir2"}, check: func() bool { return in("dir2/x") == "x" }},
		{args: []string{"chmod", "0600", "/moved.txt"}, check: func() bool { return mode("moved.txt") == 0o600 }},
		{args: []string{"chmod", "-R", "700", "/dir2"}, check: func() bool { return mode("dir2/x") == 0o700 }},
		{args: []string{"chown", fmt.Sprint(os.Getuid()), "/moved.txt"}},
		{args: []string{"chmod", "rwx", "/moved.txt"}, code: 3, stderr: "octal mode"},
		{args: []string{"rm", "-r", "/dir2"}, check: func() bool { return in("dir2/x") == "" }},
		{args: []string{"stat", "/o.txt"}, stdout: ""},
		{args: []string{"mkdir", "/m"}, code: 1, stderr: "mkdir has no route in the named family"},
		{args: []string{"grep", "x"}, code: 1, stderr: "grep has no route in the named family"},
		{args: []string{"download", "/o.txt", "-"}, code: 1, stderr: "download has no route"},
		{args: []string{"tar", "/"}, code: 1, stderr: "tar has no route"},
	}
	for _, tc := range cases {
		var stdout, stderr bytes.Buffer
		args := append([]string{tc.args[0], "--server", d.url, "--sandbox", "other"}, tc.args[1:]...)
		err := run(context.Background(), args, strings.NewReader(tc.stdin), &stdout, &stderr)
		code := report(err, &stderr)
		if code != tc.code || (tc.stdout != "" && stdout.String() != tc.stdout) || !strings.Contains(stderr.String(), tc.stderr) || (tc.check != nil && !tc.check()) {
			t.Errorf("%q: exit %d (want %d), stdout %q (want %q), stderr %q (want %q)", tc.args, code, tc.code, stdout.String(), tc.stdout, stderr.String(), tc.stderr)
		}
	}
	t.Setenv("SANDFS_SANDBOX", "other")
	if out, _, code := d.cli(t, "", "cat", "/o.txt"); out != "other" || code != 0 {
		t.Errorf("SANDFS_SANDBOX: %q %d", out, code)
	}
	if out, _, code := d.cli(t, "", "cat", "--sandbox", "default", "/o.txt"); out != "default" || code != 0 {
		t.Errorf("--sandbox default over SANDFS_SANDBOX: %q %d", out, code)
	}
	if _, errOut, code := d.cli(t, "", "ls", "--sandbox", "nope", "/"); code != 2 {
		t.Errorf("unknown sandbox: %d %q", code, errOut)
	}
}

func TestVersionVerb(t *testing.T) {
	for _, args := range [][]string{{"version"}, {"--version"}} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		if err != nil || stdout.String() != rest.Version()+"\n" || !strings.HasPrefix(stdout.String(), "sandfs ") {
			t.Errorf("%q: %v %q", args, err, stdout.String())
		}
	}
}

// TestNotSandfs: another HTTP service answers one line, exit 1.
func TestNotSandfs(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"HTML 404": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(404)
			io.WriteString(w, "<html><body><h1>404 Not Found</h1><hr>nginx</body></html>\n")
		},
		"HTML 200": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, "<html>welcome</html>")
		},
		"JSON of another API": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			io.WriteString(w, `{"timestamp":"x","status":404,"path":"/v1/fs/file"}`)
		},
	} {
		ts := httptest.NewServer(h)
		for _, args := range [][]string{{"cat", "/a"}, {"ls", "/"}, {"rm", "/a"}, {"download", "/a", "-"}, {"mkdir", "/a"}} {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{args[0], "--server", ts.URL}, args[1:]...), strings.NewReader(""), &stdout, &stderr)
			code := report(err, &stderr)
			want := "sandfs: this does not look like a sandfs daemon at " + ts.URL + "\n"
			if code != 1 || stderr.String() != want {
				t.Errorf("%s, %q: exit %d, stderr %q, want %q", name, args, code, stderr.String(), want)
			}
		}
		ts.Close()
	}
}

// TestNotHTTP: a port that speaks another protocol is no sandfs daemon
// either.
func TestNotHTTP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// As sshd: the banner at once, then the connection stays
			// open until the client goes (closing at once races the
			// client's request: it would see a dropped connection).
			io.WriteString(c, "SSH-2.0-OpenSSH_9.2\r\n")
			go func() { io.Copy(io.Discard, c); c.Close() }()
		}
	}()
	var stdout, stderr bytes.Buffer
	url := "http://" + ln.Addr().String()
	err = run(context.Background(), []string{"ls", "--server", url, "/"}, strings.NewReader(""), &stdout, &stderr)
	if code := report(err, &stderr); code != 1 || stderr.String() != "sandfs: this does not look like a sandfs daemon at "+url+"\n" {
		t.Errorf("exit %d, %q", code, stderr.String())
	}
}

// TestMessages: what the user typed, in words.
func TestMessages(t *testing.T) {
	d := newCLIDaemon(t)
	writeFiles(t, d.root, map[string]string{"src/inner/x": "x", "f.txt": "f"})
	for _, tc := range []struct {
		args []string
		code int
		want string // the whole stderr
	}{
		{[]string{"mv", "/src", "/src/inner"}, 3, "sandfs: mv: cannot move /src into itself (/src/inner is inside it)\n"},
		{[]string{"rm", "-r", "/"}, 3, "sandfs: rm: refusing to act on /: it is the sandbox's root; remove what is in it instead\n"},
		{[]string{"put", "-", "/"}, 3, "sandfs: put: refusing to act on /: give the path of a file to write\n"},
		{[]string{"grep", "("}, 3, "sandfs: grep: invalid pattern \"(\": missing closing )\n"},
		{[]string{"grep", "-U", "a("}, 3, "sandfs: grep: invalid pattern \"a(\": missing closing )\n"},
		{[]string{"find", "/", "["}, 3, "sandfs: find: invalid pattern \"[\": malformed glob (an unclosed [ or a trailing \\)\n"},
	} {
		_, errOut, code := d.cli(t, "", tc.args...)
		if code != tc.code || errOut != tc.want {
			t.Errorf("%q: exit %d, stderr %q; want %d %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	if !exists(t, filepath.Join(d.root, "src/inner/x")) {
		t.Errorf("a refusal changed the tree")
	}
	// The old order of put: the error says the new one.
	local := filepath.Join(t.TempDir(), "l.txt")
	os.WriteFile(local, []byte("l"), 0o644)
	if _, errOut, code := d.cli(t, "", "put", "/remote.txt", local); code != 1 || !strings.Contains(errOut, "put takes LOCAL then PATH") {
		t.Errorf("old order: %d %q", code, errOut)
	}
	if _, _, code := d.cli(t, "", "put", local, "/remote.txt"); code != 0 || !exists(t, filepath.Join(d.root, "remote.txt")) {
		t.Errorf("put LOCAL PATH: %d", code)
	}
	if _, _, code := d.cli(t, "old", "put", "/old.txt", "-"); code != 0 || !exists(t, filepath.Join(d.root, "old.txt")) {
		t.Errorf("put PATH -: %d", code)
	}
	up := t.TempDir()
	writeFiles(t, up, map[string]string{"u/v": "v"})
	if out, _, code := d.cli(t, "", "upload-batch", up, "/up"); code != 0 || !strings.Contains(out, "/up/u/v") {
		t.Errorf("upload-batch LOCALDIR PATH: %d %q", code, out)
	}
}

// TestTokenHint: a token sent and refused is said so; none sent, wanted.
func TestTokenHint(t *testing.T) {
	d := newCLIDaemonToken(t, "right")
	_, errOut, code := d.cli(t, "", "ls", "/") // d.cli sends "x"
	if code != 3 || !strings.Contains(errOut, "the daemon refused the token sent") || strings.Contains(errOut, "wants a token") {
		t.Errorf("wrong token: %d %q", code, errOut)
	}
	var stdout, stderr bytes.Buffer
	t.Setenv("SANDFS_STATE", t.TempDir())
	t.Setenv("SANDFS_TOKEN", "")
	err := run(context.Background(), []string{"ls", "--server", d.url, "/"}, strings.NewReader(""), &stdout, &stderr)
	if code := report(err, &stderr); code != 3 || !strings.Contains(stderr.String(), "the daemon wants a token") {
		t.Errorf("no token: %d %q", code, stderr.String())
	}
}

func exists(t *testing.T, p string) bool { _, err := os.Lstat(p); return err == nil }

// TestDownload: an existing local file is kept unless -f; a file that
// changes mid-transfer with --abort-on-change is said so, and nothing is
// left behind.
func TestDownload(t *testing.T) {
	d := newCLIDaemon(t)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	writeFiles(t, d.root, map[string]string{"big.bin": string(big), "s.txt": "new"})
	dir := t.TempDir()
	local := filepath.Join(dir, "s.txt")
	os.WriteFile(local, []byte("mine"), 0o644)
	if _, errOut, code := d.cli(t, "", "download", "/s.txt", local); code != 1 || !strings.Contains(errOut, "exists; -f (--force) replaces it") {
		t.Errorf("existing local: %d %q", code, errOut)
	}
	if b, _ := os.ReadFile(local); string(b) != "mine" {
		t.Errorf("the local file was replaced: %q", b)
	}
	if _, _, code := d.cli(t, "", "download", "-f", "/s.txt", dir); code != 0 {
		t.Errorf("-f into a directory: %d", code)
	}
	if b, _ := os.ReadFile(local); string(b) != "new" {
		t.Errorf("-f: %q", b)
	}

	// The file changes once the first bytes are out.
	d.wrap = func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			h.ServeHTTP(&changeAfterWrite{ResponseWriter: w, change: func() {
				os.WriteFile(filepath.Join(d.root, "big.bin"), []byte("changed"), 0o644)
			}}, r)
		})
	}
	for _, dst := range []string{filepath.Join(dir, "big.bin"), "-"} {
		writeFiles(t, d.root, map[string]string{"big.bin": string(big)})
		out, errOut, code := d.cli(t, "", "download", "--abort-on-change", "/big.bin", dst)
		if code != 1 || errOut != "sandfs: download /big.bin: the file changed during the download (--abort-on-change); nothing was kept\n" {
			t.Errorf("%s: exit %d, stderr %q, %d bytes out", dst, code, errOut, len(out))
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("left behind: %v", ents)
	}
}

type changeAfterWrite struct {
	http.ResponseWriter
	change func()
	done   bool
}

func (c *changeAfterWrite) Write(b []byte) (int, error) {
	n, err := c.ResponseWriter.Write(b)
	if !c.done {
		c.done = true
		c.ResponseWriter.(http.Flusher).Flush()
		c.change()
		time.Sleep(20 * time.Millisecond)
	}
	return n, err
}

func (c *changeAfterWrite) Flush() { c.ResponseWriter.(http.Flusher).Flush() }

// TestTarRefusesTerminal: tar's stream is not written to a terminal (a
// real pty), as tar and gzip refuse; -f FILE writes it there instead.
func TestTarRefusesTerminal(t *testing.T) {
	d := newCLIDaemon(t)
	writeFiles(t, d.root, map[string]string{"t/a": "a"})
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		testenv.Skip(t, nil, "no pty: %v", err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	var stderr bytes.Buffer
	err = run(context.Background(), []string{"tar", "--server", d.url, "/t"}, strings.NewReader(""), tty, &stderr)
	if code := report(err, &stderr); code != 1 || !strings.Contains(stderr.String(), "refusing to write a tar stream to a terminal; redirect it or give -f FILE") {
		t.Errorf("a terminal: exit %d, %q", code, stderr.String())
	}
	out := filepath.Join(t.TempDir(), "t.tar")
	err = run(context.Background(), []string{"tar", "--server", d.url, "-f", out, "/t"}, strings.NewReader(""), tty, &stderr)
	f, ferr := os.Open(out)
	if err != nil || ferr != nil {
		t.Fatalf("-f: %v %v", err, ferr)
	}
	defer f.Close()
	if h, err := tar.NewReader(f).Next(); err != nil || !strings.HasPrefix(h.Name, "a") && h.Name != "./" {
		t.Errorf("-f: first entry %+v %v", h, err)
	}
}
