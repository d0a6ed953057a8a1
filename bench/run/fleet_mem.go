package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func readFile(p string) string {
	b, _ := os.ReadFile(p)
	return string(b)
}

// memSample is what one settled daemon holds.
type memSample struct {
	rss, anon, file, shmem float64 // KiB (/proc/PID/status VmRSS, RssAnon, RssFile, RssShmem)
	heap                   float64 // KiB: HeapAlloc after a forced GC (the live heap)
	goroutines             float64
}

// settledMemory waits for p's RSS to settle (under 0.5% change over a
// second, at most 20 s after a second's start), then reads it and the live
// heap from the debug listener at debug.
func settledMemory(p *proc, debug string) (memSample, error) {
	time.Sleep(time.Second)
	prev := procStatus(p.pid(), "VmRSS")
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); {
		time.Sleep(time.Second)
		cur := procStatus(p.pid(), "VmRSS")
		if d := cur - prev; d < prev/200 && -d < prev/200 {
			break
		}
		prev = cur
	}
	return memoryOf(p, debug)
}

// memoryOf reads p's RSS and its live heap from the debug listener at debug.
func memoryOf(p *proc, debug string) (memSample, error) {
	var m memSample
	get := func(route string) (string, error) {
		r, err := client.Get("http://" + debug + route)
		if err != nil {
			return "", err
		}
		defer r.Body.Close()
		b, err := io.ReadAll(r.Body)
		return string(b), err
	}
	heap, err := get("/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return m, err
	}
	mm := regexp.MustCompile(`# HeapAlloc = (\d+)`).FindStringSubmatch(heap)
	if mm == nil {
		return m, fmt.Errorf("no HeapAlloc in the heap profile")
	}
	h, _ := strconv.ParseFloat(mm[1], 64)
	m.heap = h / 1024
	if g, err := get("/debug/pprof/goroutine?debug=1"); err == nil {
		if gm := regexp.MustCompile(`total (\d+)`).FindStringSubmatch(g); gm != nil {
			m.goroutines, _ = strconv.ParseFloat(gm[1], 64)
		}
	}
	pid := p.pid()
	m.rss, m.anon = procStatus(pid, "VmRSS")*1024, procStatus(pid, "RssAnon")*1024
	m.file, m.shmem = procStatus(pid, "RssFile")*1024, procStatus(pid, "RssShmem")*1024
	return m, nil
}

// idleAfter is how long after start-up a sandbox counts as idle: longer
// than the SQLite connection's idle time (core/history openDB: a minute),
// after which an idle sandbox's connection is closed.
const idleAfter = 70 * time.Second

// fleetMemory: daemons serving 1 sandbox and 101, no mount, with durable
// history (the default) and with --no-history, measured once start-up
// settles and again when idle (idleAfter); the figures are (101 − 1) /
// 100. Each mode's pair runs side by side (started in turn, the order
// alternating by run), one mode after the other: each sandbox takes an
// inotify instance, and fs.inotify.max_user_instances (128 by default)
// does not let two daemons of 101 run at once.
func fleetMemory(c *cfg, t *table) error {
	dir := filepath.Join(c.work, "fleet-mem")
	roots, err := fleetRoots(filepath.Join(dir, "roots"), 101)
	if err != nil {
		return err
	}
	states := filepath.Join(dir, "states")
	os.RemoveAll(states)
	if err := os.MkdirAll(states, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(states)
	kinds := []struct {
		n    int
		args []string
	}{{1, nil}, {101, nil}, {1, []string{"--no-history"}}, {101, []string{"--no-history"}}}
	runs := c.runs
	if c.quick && !c.runsSet {
		runs = 2 // each run waits idleAfter twice
	}
	start := make([][]memSample, len(kinds))
	idle := make([][]memSample, len(kinds))
	for i := 0; i < runs; i++ {
		for _, mode := range order(2, i) {
			pair := order(2, i+mode)
			for j := range pair {
				pair[j] += 2 * mode // kinds 0, 1 or 2, 3
			}
			procs := map[int]*proc{}
			debugs := map[int]string{}
			stopAll := func() {
				for _, p := range procs {
					p.stop()
				}
			}
			var last time.Time
			for _, k := range pair {
				debugs[k] = freePort()
				p, err := startFleetd(c, states, roots[:kinds[k].n], append([]string{"--debug-listen", debugs[k]}, kinds[k].args...)...)
				if err != nil {
					stopAll()
					return fmt.Errorf("%v (fs.inotify.max_user_instances is %s: a sandbox takes one)", err, strings.TrimSpace(readFile("/proc/sys/fs/inotify/max_user_instances")))
				}
				procs[k], last = p, time.Now()
				m, err := settledMemory(p, debugs[k])
				if err != nil {
					stopAll()
					return err
				}
				start[k] = append(start[k], m)
			}
			time.Sleep(time.Until(last.Add(idleAfter)))
			for _, k := range []int{2 * mode, 2*mode + 1} {
				m, err := memoryOf(procs[k], debugs[k])
				if err != nil {
					stopAll()
					return err
				}
				idle[k] = append(idle[k], m)
				logf("fleet memory run %d: %d sandboxes %v: at start RSS %.0f KiB, heap %.0f KiB; idle RSS %.0f KiB (anon %.0f, file %.0f, shmem %.0f), heap %.0f KiB, %.0f goroutines",
					i+1, kinds[k].n, kinds[k].args, start[k][i].rss, start[k][i].heap, m.rss, m.anon, m.file, m.shmem, m.heap, m.goroutines)
			}
			stopAll()
		}
	}
	per := func(s [][]memSample, k int, f func(memSample) float64) float64 {
		var d []float64
		for i := range s[k] {
			d = append(d, (f(s[k][i])-f(s[k-1][i]))/100)
		}
		return median(d)
	}
	rss := func(m memSample) float64 { return m.rss }
	heap := func(m memSample) float64 { return m.heap }
	for _, k := range []int{1, 3} {
		mode := "durable history (the default)"
		if kinds[k].args != nil {
			mode = "`--no-history`"
		}
		base := idle[k-1][0]
		note := fmt.Sprintf("(RSS of 101 idle sandboxes − RSS of 1) / 100, %v after start-up, no mount, each sandbox with its kernel watch; per sandbox: anon %.0f KiB, file %.0f KiB, shmem %.0f KiB, %.1f goroutines; once start-up settled: %.0f KiB; %d runs, the pair side by side",
			idleAfter, per(idle, k, func(m memSample) float64 { return m.anon }), per(idle, k, func(m memSample) float64 { return m.file }),
			per(idle, k, func(m memSample) float64 { return m.shmem }), per(idle, k, func(m memSample) float64 { return m.goroutines }),
			per(start, k, rss), runs)
		v := per(idle, k, rss)
		t.single("fleet: memory per idle sandbox, RSS, "+mode, fmt.Sprintf("%.0f KiB", v),
			fmt.Sprintf("1-sandbox daemon: %.1f MiB RSS", base.rss/1024), "< 200 KiB", v < 200, note)
		v = per(idle, k, heap)
		t.single("fleet: memory per idle sandbox, Go heap (live, after GC), "+mode, fmt.Sprintf("%.0f KiB", v),
			fmt.Sprintf("1-sandbox daemon: %.1f MiB heap", base.heap/1024), "< 200 KiB", v < 200,
			fmt.Sprintf("HeapAlloc after a forced GC (the debug listener's heap profile), (101 − 1) / 100, %v after start-up; once start-up settled: %.0f KiB", idleAfter, per(start, k, heap)))
	}
	return nil
}
