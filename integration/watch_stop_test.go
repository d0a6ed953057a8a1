package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sandfs/core/history"
	"sandfs/internal/testenv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// `sandfs watch` when the daemon stops: it says so and
// exits 1, or with --follow reconnects and goes on.

// watchCLI is a running `sandfs watch --json`.
type watchCLI struct {
	cmd    *exec.Cmd
	lines  chan string
	exited chan error
	done   chan struct{} // closed when it has exited
	stderr testenv.Buffer
}

func (w *watchCLI) Stderr() string { return w.stderr.String() }

func startWatchCLI(t *testing.T, d *Daemon, args ...string) *watchCLI {
	t.Helper()
	w := &watchCLI{lines: make(chan string, 1000), exited: make(chan error, 1), done: make(chan struct{})}
	w.cmd = exec.Command(sandfsBin(t), append([]string{"watch", "--json", "--debounce", "50"}, args...)...)
	w.cmd.Env = cliEnv(d.Env()...)
	w.cmd.Stderr = &w.stderr
	stdout, err := w.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := w.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			w.lines <- sc.Text()
		}
		close(w.lines)
		w.exited <- w.cmd.Wait()
		close(w.done)
	}()
	t.Cleanup(func() {
		w.cmd.Process.Kill()
		<-w.done
	})
	// The watcher is there: its stream starts from its initial cursor.
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var list struct {
			Count int `json:"count"`
		}
		aioCall(t, d, "GET", "/v2/watch", "", &list)
		if list.Count > 0 {
			return w
		}
		select {
		case <-w.done:
			t.Fatalf("sandfs watch exited; stderr:\n%s", w.Stderr())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandfs watch made no watcher in 20 s; stderr:\n%s", w.Stderr())
		}
	}
}

// until reads event lines until every path of want was seen, and returns
// the events read.
func (w *watchCLI) until(t *testing.T, want ...string) []wireEvent {
	t.Helper()
	var got []wireEvent
	missing := map[string]bool{}
	for _, p := range want {
		missing[p] = true
	}
	deadline := time.After(20 * time.Second)
	for len(missing) > 0 {
		select {
		case line, ok := <-w.lines:
			if !ok {
				t.Fatalf("sandfs watch ended waiting for %v; stderr:\n%s", missing, w.Stderr())
			}
			var e wireEvent
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("line %q is not JSON: %v", line, err)
			}
			got = append(got, e)
			delete(missing, e.Path)
		case <-deadline:
			t.Fatalf("no event for %v in 20 s; stderr:\n%s", missing, w.Stderr())
		}
	}
	return got
}

func putFile(t *testing.T, d *Daemon, p string) {
	t.Helper()
	req, _ := http.NewRequest("PUT", d.URL+"/v1/fs/file?path="+p, strings.NewReader(p))
	req.Header.Set("Content-Type", "application/octet-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT %s: %d", p, resp.StatusCode)
	}
}

// TestWatchCLIDaemonStops: without --follow, the daemon's stop (SIGINT) and
// a lost connection (SIGKILL) end `sandfs watch` with "the daemon stopped"
// and status 1.
func TestWatchCLIDaemonStops(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGKILL} {
		t.Run(sig.String(), func(t *testing.T) {
			d := startDaemonWith(t, quickExit)
			w := startWatchCLI(t, d, "/")
			putFile(t, d, "/before.txt")
			w.until(t, "/before.txt")
			d.Signal(t, sig)
			select {
			case err := <-w.exited:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || ee.ExitCode() != 1 {
					t.Errorf("sandfs watch: got %v, want exit status 1", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("sandfs watch still runs 10 s after the daemon went; stderr:\n%s", w.Stderr())
			}
			stderr := w.Stderr()
			if !strings.Contains(stderr, "sandfs watch: the daemon stopped") || strings.Contains(stderr, "unexpected EOF\n") && sig == syscall.SIGINT {
				t.Errorf("stderr: got %q, want it to say the daemon stopped", stderr)
			}
			d.Wait(5 * time.Second) // before the harness's Stop signals again
		})
	}
}

// TestWatchCLIFollow: with --follow, `sandfs watch` outlives a restart of
// the daemon on the same --state and prints every event once: those before
// the stop, and those made after the restart before it reconnected,
// whether the daemon kept its watcher or forgot it (then it is made again).
func TestWatchCLIFollow(t *testing.T) {
	for _, forget := range []bool{false, true} {
		t.Run(map[bool]string{false: "kept", true: "forgotten"}[forget], func(t *testing.T) { testWatchFollow(t, forget) })
	}
}

func testWatchFollow(t *testing.T, forget bool) {
	d1 := startDaemonWith(t, quickExit)
	w := startWatchCLI(t, d1, "--follow", "/")
	putFile(t, d1, "/a1.txt")
	putFile(t, d1, "/a2.txt")
	events := w.until(t, "/a1.txt", "/a2.txt")
	// The watch is frozen across the restart, so that b1 and b2 are made
	// before it reconnects: it must have them from its cursor.
	if err := w.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	d1.Signal(t, syscall.SIGINT)
	if err, exited := d1.Wait(5 * time.Second); !exited || err != nil {
		w.cmd.Process.Signal(syscall.SIGCONT)
		t.Fatalf("the daemon: exited %v, err %v\n%s", exited, err, d1.Log())
	}
	if forget {
		// The daemon forgets the watcher while down (as a state directory
		// from before watchers were kept would): the CLI must make it again.
		l, err := history.Open(filepath.Join(d1.State, "sandboxes", "default"), history.Retention{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.SaveWatchers(nil); err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	args := []string{"--root", d1.Root, "--state", d1.State, "--listen", strings.TrimPrefix(d1.URL, "http://")}
	d2 := startDaemonWith(t, quickExit, args...)
	putFile(t, d2, "/b1.txt")
	putFile(t, d2, "/b2.txt")
	var list struct {
		Watchers []struct {
			WatcherID string `json:"watcher_id"`
		} `json:"watchers"`
	}
	aioCall(t, d2, "GET", "/v2/watch", "", &list)
	if want := map[bool]int{false: 1, true: 0}[forget]; len(list.Watchers) != want {
		t.Fatalf("watchers after the restart: got %+v, want %d", list, want)
	}
	if err := w.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	events = append(events, w.until(t, "/b1.txt", "/b2.txt")...)
	putFile(t, d2, "/b3.txt") // and live after it
	events = append(events, w.until(t, "/b3.txt")...)

	seen := map[uint64]bool{}
	var last uint64
	for _, e := range events {
		if seen[e.Seq] || e.Seq <= last {
			t.Errorf("event %+v: seq %d repeated or out of order (last %d)", e, e.Seq, last)
		}
		seen[e.Seq], last = true, e.Seq
	}
	perPath := map[string]int{}
	for _, e := range events {
		if e.Type == "create" {
			perPath[e.Path]++
		}
	}
	for _, p := range []string{"/a1.txt", "/a2.txt", "/b1.txt", "/b2.txt", "/b3.txt"} {
		if perPath[p] != 1 {
			t.Errorf("%s: %d create events, want 1 (events %+v)", p, perPath[p], events)
		}
	}
	stderr := w.Stderr()
	t.Logf("%d events across the restart; sandfs watch said:\n%s", len(events), stderr)
	for _, s := range []string{"the daemon stopped; reconnecting (--follow)", "reconnected"} {
		if !strings.Contains(stderr, s) {
			t.Errorf("stderr %q lacks %q", stderr, s)
		}
	}
	select {
	case err := <-w.exited:
		t.Fatalf("sandfs watch --follow exited: %v\n%s", err, stderr)
	default:
	}
}

// TestWatchCLIFilters: the default excludes hold without flags, --exclude
// adds to them, --all drops them and --include keeps only its names.
func TestWatchCLIFilters(t *testing.T) {
	d := startDaemonWith(t, quickExit)
	for _, c := range []struct {
		name       string
		args       []string
		seen, hide []string // hide: written before the last of seen, never printed
	}{
		{"defaults", nil, []string{"/app.log", "/main.go"}, []string{"/.git/HEAD", "/node_modules/x.js"}},
		{"exclude adds", []string{"--exclude", "*.log"}, []string{"/main.go"}, []string{"/app.log", "/.git/HEAD"}},
		{"all", []string{"--all"}, []string{"/.git/HEAD", "/node_modules/x.js", "/main.go"}, nil},
		{"all and exclude", []string{"--all", "--exclude", "*.log"}, []string{"/.git/HEAD", "/main.go"}, []string{"/app.log"}},
		{"include", []string{"--include", "*.go"}, []string{"/main.go"}, []string{"/app.log", "/notes.md"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := "/" + strings.ReplaceAll(c.name, " ", "-")
			if err := os.Mkdir(filepath.Join(d.Root, dir), 0o755); err != nil {
				t.Fatal(err)
			}
			w := startWatchCLI(t, d, append(c.args, dir)...)
			for _, p := range append(append([]string{}, c.hide...), c.seen...) {
				putFile(t, d, dir+p)
			}
			want := make([]string, len(c.seen))
			for i, p := range c.seen {
				want[i] = dir + p
			}
			for _, e := range w.until(t, want...) {
				for _, h := range c.hide {
					if e.Path == dir+h {
						t.Errorf("printed %+v, which %v excludes", e, c.args)
					}
				}
			}
			w.cmd.Process.Signal(syscall.SIGINT)
			<-w.exited
		})
	}
}
