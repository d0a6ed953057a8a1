package integration

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// aioCall sends a JSON request to the daemon and decodes the AIO envelope's
// data into out, failing unless the answer is 200 with success:true.
func aioCall(t *testing.T, d *Daemon, method, route, body string, out any) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, d.URL+route, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var env struct {
		Success bool            `json:"success"`
		Data    json.RawMessage `json:"data"`
	}
	if resp.StatusCode != 200 || json.Unmarshal(raw, &env) != nil || !env.Success {
		t.Fatalf("%s %s: %d %s", method, route, resp.StatusCode, raw)
	}
	if out != nil {
		if err := json.Unmarshal(env.Data, out); err != nil {
			t.Fatalf("%s %s: data %s: %v", method, route, env.Data, err)
		}
	}
}

type wireEvent struct {
	Seq          uint64 `json:"seq"`
	Type         string `json:"type"`
	Path         string `json:"path"`
	RelativePath string `json:"relative_path"`
	Origin       string `json:"origin"`
}

// TestWatchExternalWrite: the daemon runs the kernel watch, so a file
// written directly in the root is told to a watcher, as external.
func TestWatchExternalWrite(t *testing.T) {
	d := startDaemon(t)
	var w struct {
		WatcherID     string `json:"watcher_id"`
		InitialCursor uint64 `json:"initial_cursor"`
	}
	aioCall(t, d, "POST", "/v2/watch", `{"path":"/","debounce":50}`, &w)
	cursor := w.InitialCursor
	var got []wireEvent
	// The kernel watch's first walk runs beside the daemon's start: write
	// again until a write is seen.
	for i := 0; i < 10 && len(got) == 0; i++ {
		name := fmt.Sprintf("outside-%d.txt", i)
		if err := os.WriteFile(filepath.Join(d.Root, name), []byte("from outside\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		var b struct {
			Events []wireEvent `json:"events"`
			Cursor uint64      `json:"cursor"`
		}
		aioCall(t, d, "POST", "/v1/file/watch/"+w.WatcherID+"/poll", fmt.Sprintf(`{"cursor":%d,"timeout":2}`, cursor), &b)
		got, cursor = b.Events, b.Cursor
	}
	if len(got) == 0 {
		t.Fatalf("no event for a file written in the root\n%s", d.Log())
	}
	e := got[0]
	if e.Type != "create" || e.Origin != "external" || !strings.HasPrefix(e.Path, "/outside-") || e.RelativePath != e.Path[1:] {
		t.Errorf("first event: got %+v, want an external create of /outside-N.txt", e)
	}
	aioCall(t, d, "DELETE", "/v2/watch/"+w.WatcherID, "", nil)
}

// TestWatchCLI: `sandfs watch --json /` prints each event as a JSON line as
// it happens, and releases its watcher on SIGINT, exiting 0.
func TestWatchCLI(t *testing.T) {
	d := startDaemon(t)
	cmd := exec.Command(sandfsBin(t), "watch", "--json", "--debounce", "50", "/")
	cmd.Env = cliEnv(d.Env()...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	done := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Kill() // fails harmlessly once it has exited
		<-done
	})
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
		close(done)
	}()

	var seen wireEvent
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for i := 0; seen.Path == ""; {
		select {
		case line, ok := <-lines:
			if !ok {
				t.Fatalf("sandfs watch ended early; stderr:\n%s", stderr.String())
			}
			var e wireEvent
			if err := json.Unmarshal([]byte(line), &e); err != nil {
				t.Fatalf("line %q is not JSON: %v", line, err)
			}
			if e.Path == "/cli.txt" {
				seen = e
			}
		case <-tick.C: // until the watch is up, keep making the change
			if i < 50 {
				os.WriteFile(filepath.Join(d.Root, "cli.txt"), []byte(fmt.Sprint(i)), 0o644)
				i++
			}
		case <-deadline:
			t.Fatalf("no event line for /cli.txt in 20 s; stderr:\n%s\ndaemon:\n%s", stderr.String(), d.Log())
		}
	}
	if seen.Origin != "external" || (seen.Type != "create" && seen.Type != "write") || seen.Seq == 0 || seen.RelativePath != "cli.txt" {
		t.Errorf("event line: got %+v", seen)
	}

	var before struct {
		Count int `json:"count"`
	}
	aioCall(t, d, "GET", "/v2/watch", "", &before)
	if before.Count != 1 {
		t.Errorf("watchers while watching: got %d, want 1", before.Count)
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	go func() {
		for range lines {
		}
	}()
	select {
	case err := <-exited:
		if err != nil {
			t.Errorf("sandfs watch after SIGINT: %v; stderr:\n%s", err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("sandfs watch still running 15 s after SIGINT")
	}
	var after struct {
		Count int `json:"count"`
	}
	aioCall(t, d, "GET", "/v2/watch", "", &after)
	if after.Count != 0 {
		t.Errorf("watchers after SIGINT: got %d, want 0 (the CLI deletes its watcher)", after.Count)
	}
}
