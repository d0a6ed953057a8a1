package main

import (
	"bufio"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"sandfs/natsout/natstest"
)

// fleetReplicate: does replication keep up? A daemon with `--replicate`
// and `--checkpoint-every 1m` (15 s with -quick) serves a tree of 10,000
// files of 4 KiB while the harness rewrites 1,000 of them a minute through
// REST, evenly, for three intervals (two with -quick). /metrics is read
// every 250 ms: the row is the longest stretch in which a checkpoint was
// made and not yet in the fleet (sandfs_replication_checkpoints_behind
// above 0), against the interval, and the most checkpoints ever behind.
func fleetReplicate(c *cfg, t *table) error {
	interval, rounds := time.Minute, 3
	if c.quick {
		interval, rounds = 15*time.Second, 2
	}
	dir, err := tmpfsDir(c, "fleet-replicate")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	root := filepath.Join(dir, "root")
	const files = 10_000
	for i := range files {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%05d", i))
		if i < 100 {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err := os.WriteFile(p, fileBody(i, 0), 0o644); err != nil {
			return err
		}
	}
	b, err := natstest.StartServer(filepath.Join(dir, "jetstream"))
	if err != nil {
		return err
	}
	defer b.Stop()
	d, err := startSandfsIn(c, dir, root, "--events", b.URL(), "--events-host", "bench", "--replicate", "events",
		"--checkpoint-every", interval.String())
	if err != nil {
		return err
	}
	defer d.stop()

	perFile := time.Minute / 1000
	end := time.Now().Add(time.Duration(rounds) * interval)
	var longest, behindSince time.Duration
	most, sent, written := 0, 0, 0
	t0 := time.Now()
	next := t0
	nextPoll := t0
	// After the last interval's writes, polling goes on (at most another
	// interval) until the checkpoint that ends it is in the fleet.
	for now := time.Now(); now.Before(end.Add(interval)); now = time.Now() {
		if !now.Before(nextPoll) {
			behind, manifests, err := replicationOf(d.base, "default")
			if err != nil {
				return err
			}
			most, sent = max(most, behind), manifests
			switch {
			case behind > 0 && behindSince == 0:
				behindSince = now.Sub(t0)
			case behind == 0 && behindSince != 0:
				longest = max(longest, now.Sub(t0)-behindSince)
				behindSince = 0
			}
			nextPoll = nextPoll.Add(250 * time.Millisecond)
			if now.After(end) && behind == 0 && sent >= rounds {
				break
			}
		}
		if now.Before(end) && !now.Before(next) {
			i := written * 7 % files
			u := fmt.Sprintf("%s/v1/fs/file?path=%s", d.base, q(fmt.Sprintf("/d%02d/f%05d", i%100, i)))
			req, _ := http.NewRequest("PUT", u, strings.NewReader(string(fileBody(i, written+1))))
			if err := want200(req); err != nil {
				return err
			}
			written++
			next = next.Add(perFile)
		}
		time.Sleep(max(0, min(time.Until(next), time.Until(nextPoll), 10*time.Millisecond)))
	}
	if behindSince != 0 {
		longest = max(longest, time.Since(t0)-behindSince)
	}
	logf("fleet replicate: %d files rewritten in %v (and the last checkpoint awaited), %d manifests sent, longest behind %v, most behind %d",
		written, time.Since(t0).Round(time.Millisecond), sent, longest.Round(time.Millisecond), most)
	if sent < rounds {
		return fmt.Errorf("fleet replicate: %d manifests in the fleet after %d intervals", sent, rounds)
	}
	t.single(fmt.Sprintf("fleet: replication under `--checkpoint-every %v` while 1,000 files a minute are rewritten: the longest a checkpoint waited to be in the fleet / most checkpoints behind", interval),
		fmt.Sprintf("%.1f s / %d", longest.Seconds(), most), "—", fmt.Sprintf("< %v", interval), longest < interval && most <= 1,
		fmt.Sprintf("%d intervals; %d of 10,000 files of 4 KiB rewritten through REST, evenly; `--replicate events` to a nats-server in the harness; /metrics read every 250 ms; root and state on tmpfs; %d manifests sent", rounds, written, sent))
	return nil
}

// fileBody is the content of file i at its version v: 4 KiB whose first
// line is its own, so each version is an object of its own.
func fileBody(i, v int) []byte {
	head := fmt.Sprintf("file %d version %d\n", i, v)
	return []byte(head + strings.Repeat("x", 4096-len(head)))
}

// replicationOf reads sandbox name's checkpoints behind and manifests
// sent from /metrics.
func replicationOf(base, name string) (behind, sent int, err error) {
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		metric, value, ok := strings.Cut(sc.Text(), `{sandbox="`+name+`"} `)
		if !ok {
			continue
		}
		n, _ := strconv.Atoi(value)
		switch metric {
		case "sandfs_replication_checkpoints_behind":
			behind = n
		case "sandfs_replication_manifests_sent_total":
			sent = n
		}
	}
	return behind, sent, sc.Err()
}
