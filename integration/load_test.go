package integration

import (
	"context"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"sandfs/bench/load"
	"sandfs/internal/testenv"
)

// loadDuration is SOAK (make soak, e.g. 10m) or 20 s.
func loadDuration(t *testing.T) time.Duration {
	if s := os.Getenv("SOAK"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("SOAK=%q: %v", s, err)
		}
		return d
	}
	return 20 * time.Second
}

// fuseAvailable is requireFUSE without the skip: the load runs without its
// FUSE writer where the machine cannot mount (failing under
// SANDFS_REQUIRE_FUSE=1).
func fuseAvailable(t *testing.T) bool {
	_, errDev := os.Stat("/dev/fuse")
	_, errBin := exec.LookPath("fusermount3")
	if errDev == nil && errBin == nil {
		return true
	}
	if testenv.Required() {
		t.Fatal("FUSE missing (SANDFS_REQUIRE_FUSE=1)")
	}
	t.Log("FUSE missing: the load runs without its FUSE writer")
	return false
}

// TestLoad: 64 clients over the four families, four watchers of every kind
// and an sh process writing through the mount, for loadDuration. Zero 5xx,
// every acknowledged write reads back with its hash, the journal tells
// every change exactly once, and the daemon's fds and goroutines return to
// their baseline with its RSS bounded. Figures: RELIABILITY.md, "Load".
func TestLoad(t *testing.T) {
	var args []string
	mnt := ""
	if fuseAvailable(t) {
		mnt = t.TempDir()
		args = append(args, "--mount", mnt)
	}
	d, dbg := startDebugDaemon(t, args...)
	base := d.baseline(t, dbg)

	var peak procStats
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				s := d.stats(t, dbg)
				mu.Lock()
				peak.RSSKiB = max(peak.RSSKiB, s.RSSKiB)
				peak.FDs = max(peak.FDs, s.FDs)
				peak.Held = max(peak.Held, s.Held)
				peak.Threads = max(peak.Threads, s.Threads)
				peak.Goroutines = max(peak.Goroutines, s.Goroutines)
				mu.Unlock()
			}
		}
	}()
	dur := loadDuration(t)
	start := time.Now()
	rep, err := load.Run(context.Background(), load.Config{URL: d.URL, Token: d.Token, Clients: 64, Duration: dur, Mount: mnt, Window: 5, Logf: t.Logf})
	close(stop)
	wg.Wait()
	if err != nil {
		t.Fatalf("load: %v\n%s", err, d.Log())
	}
	elapsed := time.Since(start)
	after := d.settle(t, dbg, base, 2)
	fams := make([]string, 0, len(rep.ByFamily))
	for f, n := range rep.ByFamily {
		fams = append(fams, f+"="+itoa(n))
	}
	sort.Strings(fams)
	watch := make([]string, 0, len(rep.OtherWatch))
	for k, n := range rep.OtherWatch {
		watch = append(watch, k+"="+itoa(n))
	}
	sort.Strings(watch)
	t.Logf("load %v (%v with the drain and checks): %d requests (%s), %d 5xx; %d acknowledged new files (%d through FUSE), %d deleted, %d read-backs matched; journal checker read %d events; other watchers: %s",
		dur, elapsed.Round(time.Second), rep.Requests, strings.Join(fams, " "), rep.Status5xx, rep.Acked, rep.AckedFUSE, rep.Deleted, rep.Verified, rep.Events, strings.Join(watch, " "))
	t.Logf("daemon: baseline %v; peak %v; after %v", base, peak, after)
	for _, f := range rep.Failures {
		t.Error(f)
	}
	if rep.Status5xx != 0 {
		t.Errorf("%d answers were 5xx", rep.Status5xx)
	}
	if rep.Acked == 0 || rep.Verified == 0 || (mnt != "" && rep.AckedFUSE == 0) {
		t.Errorf("the load did nothing to check: %+v", rep)
	}
	if after.FDs > base.FDs+2 || after.Goroutines > base.Goroutines+2 {
		t.Errorf("leak: baseline %v, after the load %v", base, after)
	}
	// The -race runtime keeps shadow memory of about 5-10 times the heap;
	// the bound is generous for it and still catches anything that grows
	// with the number of requests or files.
	if peak.RSSKiB > 1<<20 {
		t.Errorf("peak RSS %d KiB over 1 GiB", peak.RSSKiB)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
