package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"
)

// The fleet groups (one host serving many sandboxes; `-only
// fleet` runs the three): requests per second of a daemon serving 100
// sandboxes against one serving 1 (fleet-rps, here), publish throughput to
// NATS JetStream against the journal's append rate under the mount's
// create loop (fleet-nats, fleet_nats.go), and the memory an idle sandbox
// costs (fleet-memory, fleet_mem.go).

// fleetName is the name of extra sandbox i ("s001"…; 0 is "default").
func fleetName(i int) string {
	if i == 0 {
		return "default"
	}
	return fmt.Sprintf("s%03d", i)
}

// fleetRoots makes n sandbox roots under dir (root i for fleetName(i)),
// each with the files of the request mix and "id" holding its name.
func fleetRoots(dir string, n int) ([]string, error) {
	roots := make([]string, n)
	body4k := bytes.Repeat([]byte("0123456789abcdef"), 256)
	for i := range roots {
		roots[i] = filepath.Join(dir, fleetName(i))
		if err := os.MkdirAll(roots[i], 0o755); err != nil {
			return nil, err
		}
		for name, b := range map[string][]byte{"f4k": body4k, "stat1": []byte("hello\n"), "id": []byte(fleetName(i))} {
			if err := os.WriteFile(filepath.Join(roots[i], name), b, 0o644); err != nil {
				return nil, err
			}
		}
	}
	return roots, nil
}

// fleetArgs is `--sandbox NAME=DIR` for roots[1:] (roots[0] is --root).
func fleetArgs(roots []string) []string {
	var args []string
	for i, r := range roots[1:] {
		args = append(args, "--sandbox", fleetName(i+1)+"="+r)
	}
	return args
}

// startFleetd runs sandfs serving roots (the first as default), its state
// under stateBase, plus args.
func startFleetd(c *cfg, stateBase string, roots []string, args ...string) (*proc, error) {
	state, err := os.MkdirTemp(stateBase, "state-")
	if err != nil {
		return nil, err
	}
	addr := freePort()
	all := append([]string{"serve", "--root", roots[0], "--listen", addr, "--no-auth", "--state", state}, fleetArgs(roots)...)
	return startProc("", addr, "/health", c.bin, append(all, args...)...)
}

// mixReq is one request of the mix: method, route, body.
type mixReq struct {
	method, path string
	body         []byte
}

// requestMix is the fleet's request mix on the sandbox name: a 4 KiB read,
// a 100-byte write and a stat, on the named family and on the
// sandbox-agent family (with the sandbox selector header); conn names the
// file each connection writes.
func requestMix(name string, conn int) []mixReq {
	body := bytes.Repeat([]byte("w"), 100)
	w := fmt.Sprintf("/w%02d", conn)
	n := "/v1/sandboxes/" + name + "/fs"
	return []mixReq{
		{"GET", n + "/read?path=/f4k", nil},
		{"PUT", n + "/write?path=" + q(w+"n"), body},
		{"GET", n + "/stat?path=/stat1", nil},
		{"GET", "/v1/fs/file?path=/f4k", nil},
		{"PUT", "/v1/fs/file?path=" + q(w+"a"), body},
		{"GET", "/v1/fs/stat?path=/stat1", nil},
	}
}

// mixRPS runs conns clients sending the request mix to base back to back,
// each request to the sandbox pick(k) for the k-th request (a shared
// counter), for d after a warm-up of d/5, and returns requests per second
// (all answered 200) and the server's CPU time per request in µs.
func mixRPS(base string, pid, conns int, d time.Duration, pick func(k int64) string) (float64, float64, error) {
	var k atomic.Int64
	mixes := make([]map[string][]mixReq, conns) // each client's, by sandbox
	for i := range mixes {
		mixes[i] = map[string][]mixReq{}
	}
	return drive(pid, conns, d, func(i, j int) error {
		name := pick(k.Add(1))
		if mixes[i][name] == nil {
			mixes[i][name] = requestMix(name, i)
		}
		m := mixes[i][name][j%6]
		req, _ := http.NewRequest(m.method, base+m.path, bytes.NewReader(m.body))
		req.Header.Set("X-Sandfs-Sandbox", name)
		return want200(req)
	})
}

// selectorWorks reports whether the daemon at base serves the agent
// family's routes of the sandbox the X-Sandfs-Sandbox header names (the
// registry's sandbox selector), by reading that sandbox's "id".
func selectorWorks(base, name string) bool {
	req, _ := http.NewRequest("GET", base+"/v1/fs/file?path=/id", nil)
	req.Header.Set("X-Sandfs-Sandbox", name)
	r, err := client.Do(req)
	if err != nil {
		return false
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode == 200 && string(b) == name
}

// fleetRPS: the request mix at 32 connections against a daemon serving 1
// sandbox and one serving 100, both running, taking turns: spread over the
// 100, and all on one of them.
func fleetRPS(c *cfg, t *table) error {
	dir, err := tmpfsDir(c, "fleet-rps")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	roots1, err := fleetRoots(filepath.Join(dir, "one"), 1)
	if err != nil {
		return err
	}
	roots100, err := fleetRoots(filepath.Join(dir, "hundred"), 100)
	if err != nil {
		return err
	}
	one, err := startFleetd(c, dir, roots1)
	if err != nil {
		return err
	}
	defer one.stop()
	hundred, err := startFleetd(c, dir, roots100)
	if err != nil {
		return err
	}
	defer hundred.stop()
	selector := selectorWorks(hundred.base, fleetName(50))
	kinds := []struct {
		p    *proc
		pick func(int64) string
	}{
		{one, func(int64) string { return "default" }},
		{hundred, func(k int64) string { return fleetName(int(k % 100)) }},
		{hundred, func(int64) string { return fleetName(50) }},
	}
	v := make([][]float64, len(kinds))
	cpu := make([][]float64, len(kinds))
	for i := 0; i < c.runs; i++ {
		for _, k := range order(len(kinds), i) {
			r, us, err := mixRPS(kinds[k].p.base, kinds[k].p.pid(), 32, c.dur, kinds[k].pick)
			if err != nil {
				return err
			}
			v[k], cpu[k] = append(v[k], r), append(cpu[k], us)
		}
	}
	note := "32 connections; the mix, in turn on each connection: named read (4 KiB), write (100 B), stat, then the same on the sandbox-agent routes (`/v1/fs/file`, `/v1/fs/stat`) with `X-Sandfs-Sandbox`; roots and state on tmpfs, durable history on"
	if !selector {
		note += "; this build ignores the sandbox selector, so the sandbox-agent half went to `default`"
	}
	cpuNote := func(k int) string {
		return fmt.Sprintf("; server CPU per request %.0f µs vs %.0f µs", median(cpu[k]), median(cpu[0]))
	}
	t.pair("fleet: request mix, requests/s, 100 sandboxes (spread over all 100) vs 1 sandbox", "req/s", v[1], v[0], atLeast, 0.95, note+cpuNote(1))
	t.pair("fleet: request mix, requests/s, one sandbox of 100 (`s050`) vs 1 sandbox", "req/s", v[2], v[0], atLeast, 0.95, "the same mix, all on one sandbox of the 100-sandbox daemon"+cpuNote(2))
	return nil
}
