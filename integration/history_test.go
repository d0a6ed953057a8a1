package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// histEvent is an AIO watch event with the fields this file checks.
type histEvent struct {
	Seq          uint64 `json:"seq"`
	Type         string `json:"type"`
	Path         string `json:"path"`
	Origin       string `json:"origin"`
	Actor        string `json:"actor"`
	FoundAtStart bool   `json:"found_at_start"`
}

// pollOnce polls watcher id from cursor and returns its events, the next
// cursor and overflow.
func pollOnce(t *testing.T, base, id string, cursor uint64, timeout int) ([]histEvent, uint64, bool) {
	t.Helper()
	var out struct {
		Data struct {
			Events   []histEvent `json:"events"`
			Cursor   uint64      `json:"cursor"`
			Overflow bool        `json:"overflow"`
		} `json:"data"`
	}
	resp, err := http.Get(fmt.Sprintf("%s/v2/watch/%s/poll?cursor=%d&timeout=%d&limit=1000", base, id, cursor, timeout))
	must(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || json.Unmarshal(b, &out) != nil {
		t.Fatalf("poll %s at %d: %s: %s", id, cursor, resp.Status, b)
	}
	return out.Data.Events, out.Data.Cursor, out.Data.Overflow
}

// writerLoop runs a shell loop that writes file DIR/fN for N = 1, 2, …
// and prints N once each write returned; it returns the numbers printed.
// It pauses 2 ms every 10 files: at most about 5,000 files a second, so
// that a burst of the test's length fits the kernel's event queue even if
// the daemon read none of it (a writer faster than the daemon is a loss
// the daemon tells, as overflow, which this test is not about).
func writerLoop(t *testing.T, dir string) (stop func() []int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `i=0; while :; do i=$((i+1)); echo x > "$1/f$i" || exit 0; echo $i; [ $((i % 10)) = 0 ] && sleep 0.002; done`, "sh", dir)
	out, err := cmd.StdoutPipe()
	must(t, err)
	must(t, cmd.Start())
	var mu sync.Mutex
	var acked []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			n, _ := strconv.Atoi(sc.Text())
			mu.Lock()
			acked = append(acked, n)
			mu.Unlock()
		}
	}()
	return func() []int {
		cmd.Process.Signal(syscall.SIGKILL)
		<-done
		cmd.Wait()
		mu.Lock()
		defer mu.Unlock()
		return acked
	}
}

// TestHistoryKill9: kill -9 the daemon during a burst of API, mount and
// outside writes, then start it again on the same state. Every acknowledged
// change is in the journal, told once, seq goes on, and the watcher's
// cursor from before resumes with nothing lost and nothing doubled; what
// the outside writer made while the daemon was down is told at start. What
// a kill may lose is the attribution of the newest mount changes, those
// whose events still waited in the outbox behind outside changes: they are
// told at start as found, external (RELIABILITY.md, "What a kill -9 may
// lose").
func TestHistoryKill9(t *testing.T) {
	requireFUSE(t)
	state, mnt, root := t.TempDir(), t.TempDir(), t.TempDir()
	for _, d := range []string{"api", "ext", "mnt"} {
		must(t, os.Mkdir(filepath.Join(root, d), 0o777))
	}
	args := []string{"--root", root, "--state", state, "--mount", mnt, "--no-auth"}
	d := startDaemon(t, args...)
	if !mounted(t, mnt) {
		t.Fatalf("not mounted:\n%s", d.Log())
	}
	w := newWatch(t, d)
	cursor := w.cursor

	// The burst: a client of the API, a process on the mount, a process
	// writing the root directly.
	var apiMu sync.Mutex
	var apiAcked []int
	apiStop := make(chan struct{})
	apiDone := make(chan struct{})
	go func() {
		defer close(apiDone)
		c := &http.Client{Timeout: 5 * time.Second}
		for i := 1; ; i++ {
			select {
			case <-apiStop:
				return
			default:
			}
			req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/v1/fs/file?path=/api/f%d", d.URL, i), strings.NewReader("a"))
			req.Header.Set("X-Sandfs-Actor", "agent-1")
			resp, err := c.Do(req)
			if err != nil {
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 200 {
				apiMu.Lock()
				apiAcked = append(apiAcked, i)
				apiMu.Unlock()
			}
		}
	}()
	stopMnt := writerLoop(t, filepath.Join(mnt, "mnt"))
	stopExt := writerLoop(t, filepath.Join(root, "ext"))

	// Read the watcher while the burst runs, as a client would.
	var before []histEvent
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) {
		evs, next, overflow := pollOnce(t, d.URL, w.id, cursor, 1)
		if overflow {
			t.Fatalf("overflow before the kill at cursor %d", cursor)
		}
		before = append(before, evs...)
		cursor = next
	}
	d.Signal(t, syscall.SIGKILL)
	d.Wait(10 * time.Second)
	close(apiStop)
	<-apiDone
	mntAcked := stopMnt()
	time.Sleep(200 * time.Millisecond) // the outside writer goes on while the daemon is down
	extAcked := stopExt()
	if len(apiAcked) == 0 || len(mntAcked) == 0 || len(extAcked) == 0 {
		t.Fatalf("a writer made nothing: api %d, mount %d, outside %d", len(apiAcked), len(mntAcked), len(extAcked))
	}
	lastSeq := cursor
	for _, e := range before {
		lastSeq = max(lastSeq, e.Seq)
	}

	d2 := startDaemon(t, args...)
	if !mounted(t, mnt) {
		t.Fatalf("not mounted after the restart:\n%s", d2.Log())
	}
	// The watcher is the same one, and the cursor resumes.
	var after []histEvent
	quiet := 0
	for quiet < 2 {
		evs, next, overflow := pollOnce(t, d2.URL, w.id, cursor, 2)
		if overflow {
			t.Fatalf("overflow after the restart at cursor %d", cursor)
		}
		if len(evs) == 0 {
			quiet++
		}
		after = append(after, evs...)
		cursor = next
	}
	all := append(before, after...)
	seen := map[uint64]bool{}
	creates := map[string]histEvent{}
	var prev uint64
	for _, e := range all {
		if e.Seq <= prev || seen[e.Seq] {
			t.Fatalf("seq %d after %d: out of order or twice", e.Seq, prev)
		}
		prev, seen[e.Seq] = e.Seq, true
		if e.Type == "create" {
			if old, dup := creates[e.Path]; dup {
				t.Errorf("%s created twice: %+v and %+v", e.Path, old, e)
			}
			creates[e.Path] = e
		}
	}
	foundFUSE := 0
	firstFound := 0 // the first mount change found at start (0: none)
	check := func(dir, origin string, acked []int) {
		for _, n := range acked {
			p := fmt.Sprintf("/%s/f%d", dir, n)
			e, ok := creates[p]
			switch {
			case !ok:
				t.Errorf("acknowledged %s (%s) is not in the journal", p, origin)
			case origin == "fuse" && e.Origin == "external" && e.FoundAtStart:
				// A mount change whose event waited in the outbox behind
				// outside changes (core/watch/outbox.go) when the kill came: the
				// journal tells it once, found at start.
				foundFUSE++
				if firstFound == 0 {
					firstFound = n
				}
			case origin == "fuse" && firstFound != 0:
				// What waits in the outbox is appended in order, and a
				// mount change is appended at once only when nothing
				// waits: so the attributions a kill loses are the newest.
				t.Errorf("%s was told by the mirror, but the earlier f%d was found at start: a kill -9 may lose the attribution of the newest mount changes only", p, firstFound)
			case origin != "" && e.Origin != origin:
				t.Errorf("%s told with origin %s, want %s", p, e.Origin, origin)
			case origin == "api" && e.Actor != "agent-1":
				t.Errorf("%s told with actor %q", p, e.Actor)
			}
		}
	}
	check("api", "api", apiAcked)
	check("mnt", "fuse", mntAcked)
	check("ext", "external", extAcked)
	found := 0
	for _, e := range after {
		if e.FoundAtStart {
			found++
			if e.Origin != "external" {
				t.Errorf("found at start with origin %s: %+v", e.Origin, e)
			}
		}
	}
	if found == 0 {
		t.Errorf("nothing found at start, though the outside writer made files while the daemon was down")
	}
	var firstAfter uint64
	for _, e := range after {
		if e.Seq > lastSeq {
			firstAfter = e.Seq
			break
		}
	}
	if firstAfter == 0 || firstAfter > lastSeq+uint64(len(after))+1 {
		t.Errorf("seq after the restart: first new %d, last before %d", firstAfter, lastSeq)
	}
	t.Logf("api %d, mount %d, outside %d acknowledged; %d events before the kill, %d after (%d found at start, %d of them the mount's)",
		len(apiAcked), len(mntAcked), len(extAcked), len(before), len(after), found, foundFUSE)
}

// TestHistoryLogVerb: `sandfs log` prints who changed what, filtered, and
// still does after the daemon restarted; what was made while it was down
// is marked found at start.
func TestHistoryLogVerb(t *testing.T) {
	state, root := t.TempDir(), t.TempDir()
	d := startDaemon(t, "--root", root, "--state", state)
	for _, p := range []string{"/a.txt", "/b.txt"} {
		res := runSandfs(t, d.Env(), []byte("hi"), "put", p, "-")
		if res.Code != 0 {
			t.Fatalf("put: %s", res)
		}
	}
	req, _ := http.NewRequest("PUT", d.URL+"/v1/fs/file?path=/agent.txt", strings.NewReader("x"))
	req.Header.Set("X-Sandfs-Actor", "agent-7")
	resp, err := d.Client().Do(req)
	must(t, err)
	resp.Body.Close()
	res := d.CLI(t, nil, "log", "--actor", "agent-7")
	if res.Code != 0 || strings.Count(res.Stdout, "\n") != 2 || !strings.Contains(res.Stdout, "api      create /agent.txt by agent-7") ||
		!strings.Contains(res.Stdout, "api      write  /agent.txt by agent-7") {
		t.Fatalf("log --actor agent-7:\n%s", res)
	}
	d.Stop(t)
	must(t, os.WriteFile(filepath.Join(root, "while-down.txt"), []byte("d"), 0o644))
	d = startDaemon(t, "--root", root, "--state", state)
	deadline := time.Now().Add(15 * time.Second)
	for {
		res = d.CLI(t, nil, "log", "--last", "100")
		if strings.Contains(res.Stdout, "while-down.txt") || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{"create /a.txt", "write  /b.txt", "by agent-7", "external create /while-down.txt (found at start)"} {
		if !strings.Contains(res.Stdout, want) {
			t.Errorf("log after the restart lacks %q:\n%s", want, res)
		}
	}
	if res := d.CLI(t, nil, "log", "--origin", "nope"); res.Code == 0 || !strings.Contains(res.Stderr, "origin") {
		t.Errorf("log --origin nope: %s", res)
	}
}
