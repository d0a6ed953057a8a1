package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sandfs/natsout/natstest"
)

// fileSize is the size of a moved tree's files.
const fileSize = 10 << 10

// fleetMove: a sandbox of 100,000 files and 1 GiB (10,000 files and 100
// MiB with -quick) moved between daemons of this machine through a
// nats-server in the harness, against `tar | tar` of the same tree
// between two directories, taking turns. Each of these moves goes to a
// daemon started for it (its store empty: every object is fetched, every
// file written), after the sandbox's last checkpoint was replicated, as a
// fleet with --replicate keeps it. Then the sandbox moves back and forth
// between the last two hosts, each time after 100 changed files
// (backRows).
func fleetMove(c *cfg, t *table) error {
	files, runs := 100_000, 3
	if c.quick {
		files, runs = 10_000, 2
	}
	dir, err := tmpfsDir(c, "fleet-move")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	b, err := natstest.StartServer(filepath.Join(dir, "jetstream"))
	if err != nil {
		return err
	}
	defer b.Stop()
	var hosts []*proc
	defer func() {
		for _, h := range hosts {
			h.stop()
		}
	}()
	host := func(i int) (*proc, string, error) {
		name := fmt.Sprintf("h%d", i)
		sbx := filepath.Join(dir, name, "sandboxes")
		if err := os.MkdirAll(filepath.Join(dir, name, "default"), 0o755); err != nil {
			return nil, "", err
		}
		if i == 0 {
			if err := fillTree(filepath.Join(sbx, "big"), files); err != nil {
				return nil, "", err
			}
		}
		if err := os.MkdirAll(sbx, 0o755); err != nil {
			return nil, "", err
		}
		p, err := startSandfsIn(c, filepath.Join(dir, name), filepath.Join(dir, name, "default"), "--sandboxes", sbx, "--events", b.URL(), "--events-host", name,
			"--replicate", "events", "--placement", "events")
		if err != nil {
			return nil, "", err
		}
		p.host = name
		hosts = append(hosts, p)
		return p, sbx, nil
	}
	src, srcDir, err := host(0)
	if err != nil {
		return err
	}
	if err := waitOK(src.base+"/v1/sandboxes/big/fs/list?path=/", 5*time.Minute); err != nil {
		return err
	}
	t0 := time.Now()
	if err := replicateNow(src.base, "big"); err != nil {
		return err
	}
	logf("fleet move: %d files of %d KiB served and first replicated in %v", files, fileSize>>10, time.Since(t0).Round(time.Millisecond))

	var moves, tars []float64
	var last movedAnswer
	var prev *proc
	for r := 1; r <= runs; r++ {
		dst, dstDir, err := host(r)
		if err != nil {
			return err
		}
		tarRun := func() error {
			to := filepath.Join(dir, "tar-copy")
			os.RemoveAll(to)
			if err := os.MkdirAll(to, 0o755); err != nil {
				return err
			}
			t1 := time.Now()
			cmd := exec.Command("sh", "-c", `tar -C "$1" -cf - . | tar -C "$2" -xf -`, "sh", filepath.Join(srcDir, "big"), to)
			if out, err := cmd.CombinedOutput(); err != nil {
				return fmt.Errorf("tar | tar: %v: %s", err, out)
			}
			tars = append(tars, time.Since(t1).Seconds())
			return os.RemoveAll(to)
		}
		if r%2 == 0 {
			if err := tarRun(); err != nil {
				return err
			}
		}
		t1 := time.Now()
		if last, err = moveSandbox(src.base, "big", dst.host); err != nil {
			return err
		}
		moves = append(moves, time.Since(t1).Seconds())
		// The new host fills its store from the tree after it serves the
		// sandbox: that work is waited for, untimed, so it slows neither
		// tar nor the next move.
		t2 := time.Now()
		if err := waitOK(dst.base+"/v1/sandboxes/big/checkpoints/"+last.Checkpoint, 10*time.Minute); err != nil {
			return fmt.Errorf("the store of %s after the move: %w", dst.host, err)
		}
		logf("fleet move %d: %s stored checkpoint %s %.2f s after the answer", r, dst.host, last.Checkpoint, time.Since(t2).Seconds())
		if r%2 == 1 {
			if err := tarRun(); err != nil {
				return err
			}
		}
		logf("fleet move %d: %s to %s in %.2f s (the daemon's %.2f s), sent %d B, fetched %d objects %d B; tar | tar %.2f s",
			r, src.host, dst.host, moves[len(moves)-1], last.Seconds, last.Sent.Bytes, last.Fetched.Objects, last.Fetched.Bytes, tars[len(tars)-1])
		prev, src, srcDir = src, dst, dstDir
	}
	t.pair(fmt.Sprintf("fleet: move of a %d-file, %d MiB sandbox between two daemons through the broker (POST …/move, to a fresh host) vs tar | tar of its tree, s", files, files*fileSize>>20), "s",
		moves, tars, atMost, 2.0, fmt.Sprintf("%d moves, each to a daemon started for it (every object fetched, every file written), taking turns with `tar -C ROOT -cf - . | tar -C NEW -xf -`; the new host's store, filled from the tree after the sandbox is served, waited for (untimed) before the next turn; the sandbox's checkpoints replicated before (--replicate), as a fleet keeps them; roots, states and the broker's store on tmpfs; the last move sent %d B and fetched %d B", runs, last.Sent.Bytes, last.Fetched.Bytes))
	return backRows(c, t, files, [2]*proc{prev, src})
}

// backRows: the sandbox moved back and forth between two hosts (h[1]
// holds it), each time after 100 of its files were rewritten on the
// holder: the receiving host still holds the root it served before, so
// only what changed is sent and fetched. Rows: what the move sent
// against the changed files' size, and how long it took.
func backRows(c *cfg, t *table, files int, h [2]*proc) error {
	var secs, sent, changed []float64
	holder := 1
	for r := 0; r < c.runs; r++ {
		n := 0
		for j := 0; j < 100; j++ {
			i := (r*7919 + j*997) % files
			body := fmt.Sprintf("file %d, round %d\n", i, r)
			body += strings.Repeat("c", fileSize-len(body))
			u := fmt.Sprintf("%s/v1/sandboxes/big/fs/write?path=%s", h[holder].base, q(fmt.Sprintf("/d%02d/f%06d", i%100, i)))
			req, _ := http.NewRequest("PUT", u, strings.NewReader(body))
			if err := want200(req); err != nil {
				return err
			}
			n += len(body)
		}
		to := 1 - holder
		t0 := time.Now()
		m, err := moveSandbox(h[holder].base, "big", h[to].host)
		if err != nil {
			return err
		}
		secs = append(secs, time.Since(t0).Seconds())
		sent = append(sent, float64(m.Sent.Bytes))
		changed = append(changed, float64(n))
		logf("fleet move back %d: %s to %s after 100 changed files (%d B) in %.2f s, sent %d objects %d B, fetched %d objects %d B",
			r+1, h[holder].host, h[to].host, n, secs[r], m.Sent.Objects, m.Sent.Bytes, m.Fetched.Objects, m.Fetched.Bytes)
		holder = to
	}
	t.pair("fleet: bytes a move sends after 100 changed files (to the host that served the sandbox before) vs those files' size", "B",
		sent, changed, atMost, 1.2, fmt.Sprintf("%d moves back and forth between the last two hosts, each after 100 files of %d KiB rewritten through REST on the holder; sent: the answer's `sent` (what the old host's replicator sent for the move's checkpoint)", c.runs, fileSize>>10))
	t.single("fleet: time of a move after 100 changed files (to the host that served the sandbox before), s (median / worst)",
		fmt.Sprintf("%.2f / %.2f s", median(secs), maxOf(secs)), "—", "< 1 s", median(secs) < 1,
		fmt.Sprintf("the same %d moves: request to answer, writes refused for all of it; the receiving host restores the root it kept in place", c.runs))
	return nil
}

// fillTree makes n files of fileSize bytes in 100 directories under root,
// each with a first line of its own (one object each).
func fillTree(root string, n int) error {
	for i := range n {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%06d", i))
		if i < 100 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				return err
			}
		}
		head := fmt.Sprintf("file %d\n", i)
		if err := os.WriteFile(p, []byte(head+strings.Repeat("m", fileSize-len(head))), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// replicateNow takes a checkpoint of sandbox name and waits until the
// fleet has it.
func replicateNow(base, name string) error {
	resp, err := client.Post(base+"/v1/sandboxes/"+name+"/checkpoints", "application/json", strings.NewReader(`{}`))
	if err != nil {
		return err
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("checkpoint of %s: %d %s", name, resp.StatusCode, b)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		behind, sent, err := replicationOf(base, name)
		if err != nil {
			return err
		}
		if behind == 0 && sent > 0 {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("the checkpoint of %s was not replicated in 10 minutes", name)
}

// waitOK polls GET url until it answers 200.
func waitOK(url string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		r, err := client.Get(url)
		if err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("GET %s: %d", url, r.StatusCode)
		}
		if time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// movedAnswer is what POST …/move answers that the rows use.
type movedAnswer struct {
	Checkpoint    string
	Seconds       float64
	Sent, Fetched struct{ Objects, Bytes int64 }
}

func moveSandbox(base, name, to string) (movedAnswer, error) {
	var m movedAnswer
	j, _ := json.Marshal(map[string]string{"to": to})
	resp, err := client.Post(base+"/v1/sandboxes/"+name+"/move", "application/json", bytes.NewReader(j))
	if err != nil {
		return m, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return m, fmt.Errorf("move %s to %s: %d %s", name, to, resp.StatusCode, b)
	}
	return m, json.Unmarshal(b, &m)
}
