package integration

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"sandfs/natsout"
)

// TestChaosKill9: the daemon is killed (SIGKILL) at a random point of a
// burst of writes, a checkpoint, a restore, a tar extraction and a copy,
// and started again on the same root and state each time. After every
// start: no event names one of the daemon's temp names, seq increases
// strictly and no number is ever given to a second event, every write the
// daemon acknowledged is told exactly once (never found again at start),
// and no temp is left in the tree. At the end every acknowledged
// checkpoint restores the tree it recorded, byte for byte.
func TestChaosKill9(t *testing.T) {
	root, state := t.TempDir(), t.TempDir()
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 29))
	t.Logf("seed %d", rng.Uint64()) // the kill points differ run to run; the rules do not
	c := &chaos{t: t, root: root, seen: map[uint64]string{}}
	kinds := []string{"burst", "checkpoint", "restore", "tar", "copy", "burst", "checkpoint"}
	for round, kind := range kinds {
		d := startDaemon(t, "--root", root, "--state", state)
		c.d = d
		c.check(round)
		c.prepare(round)
		done := make(chan struct{})
		go func() {
			defer close(done)
			c.run(kind, round)
		}()
		time.Sleep(time.Duration(20+rng.IntN(280)) * time.Millisecond)
		d.Signal(t, syscall.SIGKILL)
		if _, exited := d.Wait(30 * time.Second); !exited {
			t.Fatalf("round %d (%s): the daemon did not die within 30s of SIGKILL", round, kind)
		}
		<-done
		t.Logf("round %d: killed during %s; %d writes and %d checkpoints acknowledged so far", round, kind, len(c.acked), len(c.cps))
	}
	d := startDaemon(t, "--root", root, "--state", state)
	c.d = d
	c.check(len(kinds))
	for _, cp := range c.cps {
		var res struct {
			Written []string `json:"written"`
		}
		if code := c.post("/v1/sandboxes/default/restore", map[string]any{"checkpoint": cp.id}, &res); code != 200 {
			t.Fatalf("restore of %s: %d", cp.id, code)
		}
		if diff := treeDiff(cp.tree, snapshotTree(t, root)); diff != "" {
			t.Errorf("checkpoint %s restored differs from the tree it recorded:\n%s", cp.id, diff)
		}
	}
}

// chaos is the test's record of what the daemon acknowledged.
type chaos struct {
	t    *testing.T
	d    *Daemon
	root string
	mu   sync.Mutex
	// acked: every write answered 2xx, by path (each path written once).
	acked []string
	cps   []ackedCheckpoint
	// seen: every seq told so far, with what it told.
	seen    map[uint64]string
	maxSeen uint64
}

type ackedCheckpoint struct {
	id   string
	tree map[string]string
}

// prepare writes what the round's operation works on, and takes a
// checkpoint of it (not killed: the restores and the final check have
// something to restore).
func (c *chaos) prepare(round int) {
	for i := 0; i < 5; i++ {
		c.write(fmt.Sprintf("/work/r%d/f%d", round, i))
	}
	if !c.checkpoint() {
		c.t.Fatalf("round %d: a checkpoint with nothing killing it failed", round)
	}
}

// checkpoint takes a checkpoint, and records it with the tree it holds
// when the daemon acknowledged it.
func (c *chaos) checkpoint() bool {
	tree := snapshotTree(c.t, c.root)
	var res struct {
		ID string `json:"id"`
	}
	if c.post("/v1/sandboxes/default/checkpoints", map[string]any{}, &res) != 201 {
		return false
	}
	c.mu.Lock()
	c.cps = append(c.cps, ackedCheckpoint{id: res.ID, tree: tree})
	c.mu.Unlock()
	return true
}

// run starts the operation the daemon is killed in; its failures (the
// connection cut by the kill) are expected.
func (c *chaos) run(kind string, round int) {
	switch kind {
	case "burst":
		for i := 0; ; i++ {
			if !c.write(fmt.Sprintf("/burst/r%d/f%04d", round, i)) {
				return
			}
		}
	case "checkpoint":
		c.write(fmt.Sprintf("/work/r%d/more", round)) // something new to store
		c.checkpoint()
	case "restore":
		c.mu.Lock()
		first := c.cps[0].id // the oldest: the most to change
		c.mu.Unlock()
		c.post("/v1/sandboxes/default/restore", map[string]any{"checkpoint": first}, nil)
	case "tar":
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for i := 0; i < 400; i++ {
			body := strings.Repeat(fmt.Sprintf("entry %d ", i), 200)
			tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("d%d/e%03d", i%10, i), Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg})
			tw.Write([]byte(body))
		}
		tw.Close()
		req, _ := http.NewRequest("PUT", c.d.URL+"/v2/fs/tree?mode=merge&path="+url.QueryEscape(fmt.Sprintf("/tar/r%d", round)), &b)
		req.Header.Set("Content-Type", "application/x-tar")
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	case "copy":
		c.post("/v1/sandboxes/default/fs/copy", map[string]any{"source": "/work", "dest": fmt.Sprintf("/copy/r%d", round), "recursive": true}, nil)
	}
}

// write PUTs a file of its own path's content, and records it when the
// daemon acknowledged it.
func (c *chaos) write(p string) bool {
	req, _ := http.NewRequest("PUT", c.d.URL+"/v1/fs/file?path="+url.QueryEscape(p), strings.NewReader("content of "+p))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		return false
	}
	c.mu.Lock()
	c.acked = append(c.acked, p)
	c.mu.Unlock()
	return true
}

// post sends v as JSON and decodes the answer into out; it returns the
// status (0: no answer).
func (c *chaos) post(route string, v, out any) int {
	b, _ := json.Marshal(v)
	req, _ := http.NewRequest("POST", c.d.URL+route, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if out != nil {
		json.NewDecoder(resp.Body).Decode(out)
	}
	return resp.StatusCode
}

// check runs the rules on the journal and the tree of a daemon just
// started, once its start-up comparison has told what it found.
func (c *chaos) check(round int) {
	t := c.t
	events := c.settled()
	var prev uint64
	told := map[string]int{}
	for _, e := range events {
		what := e.Type + " " + e.Path + " " + e.OldPath + " " + e.Origin
		if e.Seq <= prev {
			t.Errorf("round %d: seq %d after %d", round, e.Seq, prev)
		}
		prev = e.Seq
		if was, ok := c.seen[e.Seq]; ok && was != what {
			t.Errorf("round %d: seq %d told %q, and before %q", round, e.Seq, what, was)
		} else if !ok && e.Seq <= c.maxSeen {
			t.Errorf("round %d: a new event at seq %d, at or below %d already handed out: %q", round, e.Seq, c.maxSeen, what)
		}
		c.seen[e.Seq] = what
		if strings.Contains(e.Path, "/.sandfs-") || strings.Contains(e.OldPath, "/.sandfs-") {
			t.Errorf("round %d: the daemon's temp told: %q (seq %d)", round, what, e.Seq)
		}
		// A PUT of a new file is told as its create and its write.
		switch {
		case strings.HasPrefix(e.Actor, "restore:"):
		case e.Origin != "api" && (e.Type == "create" || e.Type == "write"):
			told[e.Path] += 100 // an acknowledged write must never be found again
		case e.Type == "write":
			told[e.Path]++
		}
	}
	c.maxSeen = max(c.maxSeen, prev)
	c.mu.Lock()
	for _, p := range c.acked {
		if told[p] != 1 {
			t.Errorf("round %d: the acknowledged write of %s told %d times by the API and %d otherwise; want once by the API",
				round, p, told[p]%100, told[p]/100)
		}
	}
	c.mu.Unlock()
	filepath.WalkDir(c.root, func(p string, de fs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(de.Name(), ".sandfs-") {
			t.Errorf("round %d: a temp of the daemon's left in the tree: %s", round, p)
		}
		return nil
	})
}

// settled reads the journal until it tells nothing new for a second (the
// start-up comparison runs once the kernel watch is ready).
func (c *chaos) settled() []natsout.Message {
	var events []natsout.Message
	last, since := -1, time.Now()
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		events = keptEvents(c.t, c.d)
		if len(events) != last {
			last, since = len(events), time.Now()
			continue
		}
		if time.Since(since) >= time.Second {
			break
		}
	}
	return events
}

// snapshotTree is the tree under root: each file's content, "dir" for a
// directory, "-> target" for a symlink; the daemon's temps left out.
func snapshotTree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, de fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case strings.HasPrefix(de.Name(), ".sandfs-"):
			if de.IsDir() {
				return filepath.SkipDir
			}
		case de.IsDir():
			out[rel] = "dir"
		case de.Type()&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			out[rel] = "-> " + target
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// treeDiff says how two snapshots differ ("" when they do not).
func treeDiff(want, got map[string]string) string {
	var b strings.Builder
	for p, w := range want {
		if g, ok := got[p]; !ok {
			fmt.Fprintf(&b, "missing %s\n", p)
		} else if g != w {
			fmt.Fprintf(&b, "differs %s\n", p)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			fmt.Fprintf(&b, "extra %s\n", p)
		}
	}
	return b.String()
}
