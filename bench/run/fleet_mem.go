package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

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

// fleetMemory: a daemon serving 1 sandbox against one serving 101, idle,
// no mount, with durable history (the default) and with --no-history,
// the four taking turns; the figures are (101 − 1) / 100.
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
	samples := make([][]memSample, len(kinds))
	for i := 0; i < c.runs; i++ {
		for _, k := range order(len(kinds), i) {
			debug := freePort()
			p, err := startFleetd(c, states, roots[:kinds[k].n], append([]string{"--debug-listen", debug}, kinds[k].args...)...)
			if err != nil {
				return err
			}
			m, err := settledMemory(p, debug)
			p.stop()
			if err != nil {
				return err
			}
			samples[k] = append(samples[k], m)
			logf("fleet memory: %d sandboxes %v: RSS %.0f KiB (anon %.0f, file %.0f, shmem %.0f), heap %.0f KiB, %0.f goroutines",
				kinds[k].n, kinds[k].args, m.rss, m.anon, m.file, m.shmem, m.heap, m.goroutines)
		}
	}
	per := func(k int, f func(memSample) float64) float64 {
		var d []float64
		for i := range samples[k] {
			d = append(d, (f(samples[k][i])-f(samples[k-1][i]))/100)
		}
		return median(d)
	}
	for _, k := range []int{1, 3} {
		mode := "durable history (the default)"
		if kinds[k].args != nil {
			mode = "`--no-history`"
		}
		rss := per(k, func(m memSample) float64 { return m.rss })
		heap := per(k, func(m memSample) float64 { return m.heap })
		base := samples[k-1][0]
		note := fmt.Sprintf("(RSS of 101 idle sandboxes − RSS of 1) / 100, settled, no mount, each sandbox with its kernel watch; per sandbox: anon %.0f KiB, file %.0f KiB, shmem %.0f KiB, %.1f goroutines; %d runs taking turns",
			per(k, func(m memSample) float64 { return m.anon }), per(k, func(m memSample) float64 { return m.file }),
			per(k, func(m memSample) float64 { return m.shmem }), per(k, func(m memSample) float64 { return m.goroutines }), c.runs)
		t.single("fleet: memory per idle sandbox, RSS, "+mode, fmt.Sprintf("%.0f KiB", rss),
			fmt.Sprintf("1-sandbox daemon: %.1f MiB RSS", base.rss/1024), "< 200 KiB", rss < 200, note)
		t.single("fleet: memory per idle sandbox, Go heap (live, after GC), "+mode, fmt.Sprintf("%.0f KiB", heap),
			fmt.Sprintf("1-sandbox daemon: %.1f MiB heap", base.heap/1024), "< 200 KiB", heap < 200,
			"HeapAlloc after a forced GC (the debug listener's heap profile), (101 − 1) / 100")
	}
	return nil
}
