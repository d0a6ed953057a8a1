package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// procStats is what /proc and the daemon's --debug-listen tell about its
// resources: the leak checks compare them before and after a load.
type procStats struct {
	FDs        int   // entries of /proc/PID/fd, less the mirror's held directories
	Held       int   // directory descriptors the mirror holds by design (-1 without --debug-listen)
	Threads    int   // Threads: of /proc/PID/status
	RSSKiB     int64 // VmRSS: of /proc/PID/status
	Goroutines int   // from /debug/pprof/goroutine (-1 without --debug-listen)
}

func (p procStats) String() string {
	return fmt.Sprintf("fds=%d (+%d held) threads=%d rss=%dKiB goroutines=%d", p.FDs, p.Held, p.Threads, p.RSSKiB, p.Goroutines)
}

// startDebugDaemon starts a daemon with --debug-listen and returns it with
// the profile URL.
func startDebugDaemon(t testing.TB, args ...string) (*Daemon, string) {
	t.Helper()
	dbg := freeAddr(t)
	d := startDaemon(t, append([]string{"--debug-listen", dbg}, args...)...)
	return d, "http://" + dbg
}

// debugClient keeps no connection open to the profiles (it would count).
var debugClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// stats reads the daemon's resources. debugURL "" leaves Goroutines -1.
func (d *Daemon) stats(t testing.TB, debugURL string) procStats {
	t.Helper()
	pid := d.cmd.Process.Pid
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("daemon fds: %v", err)
	}
	st := procStats{FDs: len(ents), Held: -1, Goroutines: -1}
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ":")
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		switch k {
		case "Threads":
			st.Threads, _ = strconv.Atoi(fields[0])
		case "VmRSS":
			st.RSSKiB, _ = strconv.ParseInt(fields[0], 10, 64)
		}
	}
	if debugURL != "" {
		resp, err := debugClient.Get(debugURL + "/debug/pprof/goroutine?debug=1")
		if err != nil {
			t.Fatalf("goroutine profile: %v", err)
		}
		defer resp.Body.Close()
		line, _ := bufio.NewReader(io.LimitReader(resp.Body, 4096)).ReadString('\n')
		// "goroutine profile: total N"
		n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "goroutine profile: total")))
		if err != nil {
			t.Fatalf("goroutine profile: %q", line)
		}
		st.Goroutines = n
		st.Held = heldDirs(t, debugURL)
		st.FDs -= st.Held
	}
	return st
}

// heldDirs reads fuse_held_dirs from the daemon's /debug/vars: descriptors
// it holds open by design, one per directory node the kernel knows.
func heldDirs(t testing.TB, debugURL string) int {
	t.Helper()
	resp, err := debugClient.Get(debugURL + "/debug/vars")
	if err != nil {
		t.Fatalf("debug vars: %v", err)
	}
	defer resp.Body.Close()
	var vars struct {
		Held *int `json:"fuse_held_dirs"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&vars); err != nil || vars.Held == nil {
		t.Fatalf("debug vars: no fuse_held_dirs (%v)", err)
	}
	return *vars.Held
}

// baseline reads the daemon's resources at rest: this process's idle
// connections to it closed, and a moment for the daemon to see them go.
func (d *Daemon) baseline(t testing.TB, debugURL string) procStats {
	t.Helper()
	http.DefaultClient.CloseIdleConnections()
	time.Sleep(300 * time.Millisecond)
	return d.stats(t, debugURL)
}

// settle waits (up to 20 s) until the daemon's fds and goroutines are back
// within slack of base, closing this process's idle connections first, and
// returns the last reading. The caller judges it.
func (d *Daemon) settle(t testing.TB, debugURL string, base procStats, slack int) procStats {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		http.DefaultClient.CloseIdleConnections()
		if tr, ok := http.DefaultTransport.(*http.Transport); ok {
			tr.CloseIdleConnections()
		}
		now := d.stats(t, debugURL)
		if (now.FDs <= base.FDs+slack && now.Goroutines <= base.Goroutines+slack) || time.Now().After(deadline) {
			return now
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// tempPattern is core's temp names (core/write.go TempName, core/upload.go).
var tempPattern = regexp.MustCompile(`^\.sandfs-(upload-)?[0-9a-f]{16}\.part$`)

// findTemps lists core's temp files or staging directories under root.
func findTemps(root string) []string {
	var out []string
	filepath.WalkDir(root, func(p string, e fs.DirEntry, err error) error {
		if err == nil && tempPattern.MatchString(e.Name()) {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
			if e.IsDir() {
				return filepath.SkipDir
			}
		}
		return nil
	})
	return out
}

// waitFor polls cond every 20 ms for up to limit and reports whether it held.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}
