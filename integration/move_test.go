package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sandfs/api"
	"sandfs/natsout"
	"sandfs/natsout/natstest"
)

// startMovable starts a host of the fleet on broker b with everything a
// move needs: its own --sandboxes DIR, the journal published, checkpoints
// replicated, placement (lease TTL 3 s). Trees are directories of DIR,
// written before the daemon starts.
func startMovable(t *testing.T, b *natstest.Broker, host string, trees map[string]map[string]string) (*Daemon, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "sandboxes")
	must(t, os.Mkdir(dir, 0o755))
	for name, files := range trees {
		must(t, os.Mkdir(filepath.Join(dir, name), 0o755))
		writeFiles(t, filepath.Join(dir, name), files)
	}
	d := startDaemon(t, "--token", fleetToken, "--events", b.URL(), "--events-host", host,
		"--replicate", "events", "--placement", "events", "--lease-ttl", "3s", "--sandboxes", dir)
	return d, dir
}

// eventsPoller reads GET /v1/sandboxes/NAME/events from its cursor,
// following a 307 to the holder; a page that says overflow (the cursor is
// older than the new host's journal) is filled from the fleet's stream.
type eventsPoller struct {
	t    *testing.T
	b    *natstest.Broker
	base string
	seqs []uint64 // every seq read, in order
	c    uint64
}

func (p *eventsPoller) poll() (status int) {
	res, body := placedDo(p.t, "GET", p.base+"/v1/sandboxes/s1/events?since="+fmt.Sprint(p.c), "")
	switch res.StatusCode {
	case http.StatusTemporaryRedirect:
		u, err := url.Parse(res.Header.Get("Location"))
		must(p.t, err)
		p.base = u.Scheme + "://" + u.Host
	case http.StatusOK:
		var page struct {
			Events []struct {
				Seq uint64 `json:"seq"`
			} `json:"events"`
			Cursor   uint64 `json:"cursor"`
			Oldest   uint64 `json:"oldest"`
			Overflow bool   `json:"overflow"`
		}
		must(p.t, json.Unmarshal([]byte(body), &page))
		if page.Overflow {
			// The events before the new host's first were the old one's:
			// the stream holds them.
			for _, m := range streamOf(p.t, p.b, "s1") {
				if m.Seq > p.c && m.Seq <= page.Oldest {
					p.seqs = append(p.seqs, m.Seq)
				}
			}
			p.c = page.Oldest
			return res.StatusCode
		}
		for _, e := range page.Events {
			p.seqs = append(p.seqs, e.Seq)
		}
		p.c = page.Cursor
	}
	return res.StatusCode
}

// streamOf is the fleet's stream's messages of sandbox name, in order.
func streamOf(t *testing.T, b *natstest.Broker, name string) []natsout.Message {
	t.Helper()
	raw, err := b.Messages(natsout.StreamName)
	must(t, err)
	var out []natsout.Message
	for _, r := range raw {
		var m natsout.Message
		must(t, r.Decode(&m))
		if m.Sandbox == name {
			out = append(out, m)
		}
	}
	return out
}

// TestMoveTwoHosts: s1, served by ha, holding 10,000 small files
// (seedFiles, on ha's disk before s1 is served), is moved to hb (sandfs
// sandbox move s1 hb) while a reader polls its journal and a writer
// writes to ha. Every write answered 200 is on hb;
// the others were 503 with Retry-After (the move) or 307 (after); hb's
// tree is the move's checkpoint's, byte for byte; ha then sends s1's
// requests to hb (307; the CLI follows); hb's journal numbers on above
// the checkpoint, and a reader's cursor goes on without a gap; the
// stream holds each seq once. Bad moves change nothing: an unknown
// sandbox 404, to itself 400, to no host 400, a sandbox token 403, a move
// back into another sandbox's directory 409, a daemon without
// --placement 501. With ha's old root moved out of its DIR, s1 moves back
// after 100 files changed on hb, and hb sends only their objects
// (move_back_test.go moves back onto the old root).
func TestMoveTwoHosts(t *testing.T) {
	seeded := seedFiles()
	b, ha, dirA, hb, dirB, made := movableS1(t, seeded)
	rootA := filepath.Join(dirA, "s1")
	writeFiles(t, rootA, map[string]string{"a.txt": "alpha", "d/b.txt": "beta", "run.sh": "#!/bin/sh\necho hi\n"})
	must(t, os.Chmod(filepath.Join(rootA, "run.sh"), 0o750))
	must(t, os.Mkdir(filepath.Join(rootA, "empty"), 0o700))
	must(t, os.Symlink("d/b.txt", filepath.Join(rootA, "link")))
	readA := ha.URL + "/v1/sandboxes/s1/fs/read?path=%2Frun.sh"
	waitPlaced(t, ha, "GET", readA, "", 200)

	// Bad moves: refused, nothing changed.
	moveURL := ha.URL + "/v1/sandboxes/%s/move"
	for _, c := range []struct {
		name, body string
		status     int
	}{
		{"nope", `{"to":"hb"}`, 404},
		{"s1", `{"to":"ha"}`, 400},
		{"s1", `{"to":"nohost"}`, 400},
		{"s1", `{"to":"Bad_Host"}`, 400},
		{"s1", `{}`, 400},
	} {
		if res, got := placedDo(t, "POST", fmt.Sprintf(moveURL, c.name), c.body); res.StatusCode != c.status {
			t.Fatalf("move %s %s: %d %s, want %d", c.name, c.body, res.StatusCode, got, c.status)
		}
	}
	req, _ := http.NewRequest("POST", fmt.Sprintf(moveURL, "s1"), strings.NewReader(`{"to":"hb"}`))
	req.Header.Set("Authorization", "Bearer "+made.Token)
	req.Header.Set("Content-Type", "application/json")
	r403, err := bareClient(ha).Do(req)
	must(t, err)
	r403.Body.Close()
	if r403.StatusCode != 403 {
		t.Fatalf("move with s1's own token: %d, want 403", r403.StatusCode)
	}
	if res, got := placedDo(t, "PUT", ha.URL+"/v1/sandboxes/s1/fs/write?path=/still.txt", "served"); res.StatusCode != 200 {
		t.Fatalf("a write after the refused moves: %d %s", res.StatusCode, got)
	}

	// A reader of the journal, and a writer, both on ha.
	poller := &eventsPoller{t: t, b: b, base: ha.URL}
	for poller.poll() != 200 || poller.c == 0 {
		time.Sleep(20 * time.Millisecond)
	}
	type write struct {
		path   string
		status int
		retry  string
	}
	var (
		mu     sync.Mutex
		writes []write
		wg     sync.WaitGroup
	)
	stop := make(chan struct{})
	started := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; i < 100_000; i++ { // until the move ends (stop), however long it takes
			select {
			case <-stop:
				return
			default:
			}
			p := fmt.Sprintf("/w/%04d", i)
			res, _ := placedDo(t, "PUT", ha.URL+"/v1/sandboxes/s1/fs/write?path="+p, "w"+p)
			mu.Lock()
			writes = append(writes, write{p, res.StatusCode, res.Header.Get("Retry-After")})
			mu.Unlock()
			if i == 10 {
				close(started)
			}
			if res.StatusCode == http.StatusTemporaryRedirect {
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	pollDone := make(chan struct{})
	var pwg sync.WaitGroup
	pwg.Add(1)
	go func() {
		defer pwg.Done()
		for {
			select {
			case <-pollDone:
				return
			default:
			}
			poller.poll()
			time.Sleep(20 * time.Millisecond)
		}
	}()
	stopPolling := sync.OnceFunc(func() { close(pollDone); pwg.Wait() })
	t.Cleanup(stopPolling) // a failure below: no poll of the daemons stopped

	<-started
	// The move of 10,000 files takes up to a minute under -race on a busy
	// machine: the CLI is given 5.
	r := runSandfsWithin(t, 5*time.Minute, []string{"SANDFS_URL=" + ha.URL, "SANDFS_TOKEN=" + fleetToken}, nil, "sandbox", "move", "s1", "hb", "--json")
	close(stop)
	wg.Wait()
	if r.Code != 0 {
		t.Fatalf("sandbox move: %s\n--- ha\n%s\n--- hb\n%s", r, ha.Log(), hb.Log())
	}
	var moved api.SandboxMoved
	must(t, json.Unmarshal([]byte(r.Stdout), &moved))
	if moved.Name != "s1" || moved.From != "ha" || moved.To != "hb" || moved.URL != hb.URL || !strings.HasPrefix(moved.Checkpoint, "cp_") ||
		moved.Seq == 0 || moved.Sent.Objects == 0 || moved.Sent.Bytes == 0 || moved.Fetched.Objects == 0 || moved.Seconds <= 0 {
		t.Fatalf("moved %+v", moved)
	}
	// The first checkpoint of s1: what ha sent is what hb lacked.
	if moved.Fetched != moved.Sent {
		t.Fatalf("moved: sent %+v, fetched %+v: want the same", moved.Sent, moved.Fetched)
	}
	// hb's log tells the take-up and the tree's time; then, the tree
	// served, the store filled from it (an object whose only file was
	// written since is fetched again), and hb lists the checkpoint.
	took := regexp.MustCompile(`msg="took sandbox s1 up from the fleet" .* objects=(\d+) .* tree_ms=\d+`).FindStringSubmatch(hb.Log())
	if took == nil || took[1] != fmt.Sprint(moved.Fetched.Objects) {
		t.Fatalf("hb's log has no take-up line of %d objects with tree_ms:\n%s", moved.Fetched.Objects, hb.Log())
	}
	stored := regexp.MustCompile(`msg="stored checkpoint ` + moved.Checkpoint + ` of sandbox s1 from its tree" .* from_tree=(\d+) fetched=(\d+) store_ms=\d+`)
	var filled []string
	if !waitFor(2*time.Minute, func() bool { filled = stored.FindStringSubmatch(hb.Log()); return filled != nil }) {
		t.Fatalf("hb's log has no line of %s stored:\n%s", moved.Checkpoint, hb.Log())
	}
	fromTree, _ := strconv.ParseInt(filled[1], 10, 64)
	fetched, _ := strconv.ParseInt(filled[2], 10, 64)
	if fromTree == 0 || fromTree+fetched != moved.Fetched.Objects {
		t.Fatalf("hb stored %d objects from the tree and fetched %d; want the %d it lacked, most from the tree", fromTree, fetched, moved.Fetched.Objects)
	}
	if res, body := placedDo(t, "GET", hb.URL+"/v1/sandboxes/s1/checkpoints", ""); res.StatusCode != 200 || !strings.Contains(body, `"`+moved.Checkpoint+`"`) {
		t.Fatalf("hb's checkpoints of s1: %d %s; want %s listed", res.StatusCode, body, moved.Checkpoint)
	}

	// hb's tree is the checkpoint's: ha's root, untouched since (it stays
	// on ha's disk).
	rootB := filepath.Join(dirB, "s1")
	treeA := snapshot(t, rootA)
	if got := snapshot(t, rootB); got != treeA {
		t.Fatalf("hb's tree:\n%s\nwant ha's\n%s", got, treeA)
	}
	if n := strings.Count(treeA, " \"seed-"); n != len(seeded) {
		t.Fatalf("ha's tree at the move holds %d of the %d seeded files", n, len(seeded))
	}

	// Each write was 200 before the move and 503 (Retry-After) or 307
	// after; every 200 is on hb.
	mu.Lock()
	ws := append([]write(nil), writes...)
	mu.Unlock()
	after, n503 := false, 0
	for _, w := range ws {
		switch {
		case w.status == 200 && !after:
			got, err := os.ReadFile(filepath.Join(rootB, w.path))
			if err != nil || string(got) != "w"+w.path {
				t.Fatalf("write %s answered 200 on ha; on hb: %q %v", w.path, got, err)
			}
		case w.status == 503 && w.retry != "":
			after = true
			n503++
		case w.status == 307:
			after = true
		default:
			t.Fatalf("write %s: %d (Retry-After %q) after the move began=%v; want 200 before, 503 with Retry-After or 307 after", w.path, w.status, w.retry, after)
		}
	}
	t.Logf("moved %+v; %d writes, %d answered 503; the reader read %d seqs", moved, len(ws), n503, len(poller.seqs))
	if n503 == 0 {
		t.Fatalf("no write was answered 503 during the move: %+v", ws)
	}

	// ha sends s1's requests to hb; the CLI pointed at ha follows.
	res, _ := waitPlaced(t, ha, "GET", readA, "", http.StatusTemporaryRedirect)
	if loc := res.Header.Get("Location"); !strings.HasPrefix(loc, hb.URL+"/") || res.Header.Get("X-Sandfs-Holder") != "hb" {
		t.Fatalf("ha's 307: Location %q holder %q", loc, res.Header.Get("X-Sandfs-Holder"))
	}
	envA := []string{"SANDFS_URL=" + ha.URL, "SANDFS_TOKEN=" + fleetToken}
	if r := runSandfs(t, envA, nil, "cat", "--sandbox", "s1", "/a.txt"); r.Code != 0 || r.Stdout != "alpha" {
		t.Fatalf("cat through ha: %s", r)
	}

	// hb numbers on above the checkpoint; the reader goes on without a gap.
	for _, p := range []string{"/on-b-1", "/on-b-2"} {
		if res, got := placedDo(t, "PUT", hb.URL+"/v1/sandboxes/s1/fs/write?path="+p, "b"); res.StatusCode != 200 {
			t.Fatalf("write %s on hb: %d %s", p, res.StatusCode, got)
		}
	}
	var last uint64
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, got := placedDo(t, "GET", hb.URL+"/v1/sandboxes/s1/events?last=1", "")
		var page struct{ Latest uint64 }
		must(t, json.Unmarshal([]byte(got), &page))
		if page.Latest > moved.Seq {
			last = page.Latest
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hb's journal stays at %d, not above the checkpoint's seq %d", page.Latest, moved.Seq)
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopPolling()
	deadline = time.Now().Add(60 * time.Second)
	for poller.c < last {
		if time.Now().After(deadline) {
			t.Fatalf("the reader's cursor %d did not reach hb's %d (base %s)\n%s", poller.c, last, poller.base, hb.Log())
		}
		poller.poll()
		time.Sleep(50 * time.Millisecond)
	}
	if poller.base != hb.URL {
		t.Fatalf("the reader reads %s, want hb %s", poller.base, hb.URL)
	}
	for i := 1; i < len(poller.seqs); i++ {
		if poller.seqs[i] != poller.seqs[i-1]+1 {
			t.Fatalf("the reader's seqs jump from %d to %d (checkpoint's %d): %v", poller.seqs[i-1], poller.seqs[i], moved.Seq, poller.seqs)
		}
	}

	// The stream holds each seq of s1 once: ha's up to the checkpoint, hb's after.
	deadline = time.Now().Add(60 * time.Second)
	for {
		seen := map[uint64]string{}
		hbLast := uint64(0)
		for _, m := range streamOf(t, b, "s1") {
			if h, dup := seen[m.Seq]; dup {
				t.Fatalf("seq %d of s1 is in the stream twice (%s, %s)", m.Seq, h, m.Host)
			}
			seen[m.Seq] = m.Host
			if (m.Host == "ha") != (m.Seq <= moved.Seq) {
				t.Fatalf("seq %d of s1 from %s; the checkpoint's is %d", m.Seq, m.Host, moved.Seq)
			}
			if m.Host == "hb" {
				hbLast = max(hbLast, m.Seq)
			}
		}
		if hbLast >= last {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("hb's events up to %d are not in the stream (it has up to %d)", last, hbLast)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// With ha's old root moved out of its DIR and another directory of
	// the name there (no mark: not s1's), a move back is refused by ha
	// before anything changes: hb still serves s1, and the directory is
	// as it was. (The CLI pointed at ha follows its 307 to hb, the move's
	// body sent again.)
	must(t, os.Rename(rootA, filepath.Join(t.TempDir(), "s1-old")))
	writeFiles(t, rootA, map[string]string{"other.txt": "another sandbox's"})
	otherBefore := snapshot(t, rootA)
	if r := runSandfs(t, envA, nil, "sandbox", "move", "s1", "ha"); r.Code == 0 || !strings.Contains(r.Stderr, "holds s1 already") {
		t.Fatalf("move back to ha through ha: %s, want refused by ha", r)
	}
	if res, got := placedDo(t, "POST", hb.URL+"/v1/sandboxes/s1/move", `{"to":"ha"}`); res.StatusCode != 409 {
		t.Fatalf("move back to ha: %d %s, want 409", res.StatusCode, got)
	}
	if got := snapshot(t, rootA); got != otherBefore {
		t.Fatalf("the other directory s1 on ha after the refused move:\n%s\nwant\n%s", got, otherBefore)
	}
	if res, got := placedDo(t, "PUT", hb.URL+"/v1/sandboxes/s1/fs/write?path=/after-refusal", "b"); res.StatusCode != 200 {
		t.Fatalf("a write on hb after the refused move back: %d %s", res.StatusCode, got)
	}

	// With that directory gone too, s1 moves back, 100 files changed on
	// hb: what hb sent is those files' objects (and /on-b's), the rest
	// being in the fleet already; ha, holding no old root, fetches the
	// whole tree's.
	must(t, os.Rename(rootA, filepath.Join(t.TempDir(), "other")))
	changed := map[string]string{}
	for i := range 100 {
		changed[fmt.Sprintf("c/%03d", i)] = fmt.Sprintf("changed-%03d", i)
	}
	writeFiles(t, rootB, changed)
	res, body := placedDo(t, "POST", hb.URL+"/v1/sandboxes/s1/move", `{"to":"ha"}`)
	if res.StatusCode != 200 {
		t.Fatalf("move back to ha: %d %s\n--- ha\n%s\n--- hb\n%s", res.StatusCode, body, ha.Log(), hb.Log())
	}
	var back api.SandboxMoved
	must(t, json.Unmarshal([]byte(body), &back))
	t.Logf("moved back %+v", back)
	if back.From != "hb" || back.To != "ha" || back.Seq <= moved.Seq ||
		back.Sent != (api.Fetched{Objects: 101, Bytes: int64(100*len("changed-000") + len("b"))}) || back.Fetched.Objects < back.Sent.Objects {
		t.Fatalf("moved back %+v; want 101 objects sent (the changed files' and /on-b's)", back)
	}
	if got, want := snapshot(t, rootA), snapshot(t, rootB); got != want {
		t.Fatalf("ha's tree after the move back:\n%s\nwant hb's\n%s", got, want)
	}

	// A daemon without the fleet's parts moves nothing.
	lone, _ := startRegistry(t)
	createSandbox(t, lone, "s9")
	if st, got := named(t, lone, "", "POST", "s9", "/move", []byte(`{"to":"hb"}`)); st != 501 || !strings.Contains(string(got), "--placement") {
		t.Fatalf("move on a daemon without --placement: %d %s, want 501", st, got)
	}
}

// seedFiles is 10,000 small files (100 directories of 100), each with its
// own few bytes.
func seedFiles() map[string]string {
	files := make(map[string]string, 10_000)
	for d := range 100 {
		for f := range 100 {
			files[fmt.Sprintf("seed/%02d/%02d", d, f)] = fmt.Sprintf("seed-%02d-%02d", d, f)
		}
	}
	return files
}

// movableS1 starts hosts ha and hb of one broker (startMovable) and makes
// the sandbox s1 on ha: POST /v1/sandboxes, or, with seed, a directory of
// ha's DIR holding seed's files before ha starts (a large tree is then on
// disk before s1 is served, not 2 journal events a file), its token read
// from ha's state.
func movableS1(t *testing.T, seed map[string]string) (b *natstest.Broker, ha *Daemon, dirA string, hb *Daemon, dirB string, made api.SandboxCreated) {
	t.Helper()
	b = natstest.Start(t)
	if seed != nil {
		ha, dirA = startMovable(t, b, "ha", map[string]map[string]string{"s1": seed})
		hb, dirB = startMovable(t, b, "hb", nil)
		waitPlaced(t, ha, "GET", ha.URL+"/v1/sandboxes/s1/fs/stat?path=%2F", "", http.StatusOK)
		tok, err := os.ReadFile(filepath.Join(ha.State, "sandboxes", "s1", "token"))
		if err != nil {
			t.Fatalf("s1's token in ha's state: %v\n%s", err, ha.Log())
		}
		made.Name, made.Token = "s1", strings.TrimSpace(string(tok))
		return b, ha, dirA, hb, dirB, made
	}
	ha, dirA = startMovable(t, b, "ha", nil)
	hb, dirB = startMovable(t, b, "hb", nil)
	res, body := placedDo(t, "POST", ha.URL+"/v1/sandboxes", `{"name":"s1"}`)
	if res.StatusCode != 201 {
		t.Fatalf("POST s1: %d %s", res.StatusCode, body)
	}
	must(t, json.Unmarshal([]byte(body), &made))
	return b, ha, dirA, hb, dirB, made
}
