// Command run is the benchmark harness of `make bench`: every headline
// figure measured against its anchor (nginx, the sandbox-agent server,
// the reference MCP filesystem server, rg, ls -lR, the native filesystem,
// go-fuse's loopback example, libfuse's passthrough_ll and passthrough_hp
// examples, inotifywait) in the same run, on the same files, alternating
// the pair run by run, and written to bench/results.md as medians and
// ratios with the target each ratio must meet.
//
// It sets up its anchors itself: apt-get installs nginx-light, ripgrep and
// inotify-tools when missing; go-fuse's loopback example is built from the
// module cache at the version of go.mod, libfuse's passthrough_ll example
// with cc from libfuse3-dev's examples and its passthrough_hp with g++
// from bench/anchors; the sandbox-agent server comes from the npm package
// @sandbox-agent/cli-linux-x64 (the version the SDK check pins), installed
// under bench/.cache (gitignored), and so does the reference MCP
// filesystem server (npm ci of integration/testdata/mcp's lock; node and
// npm from apt when missing).
//
// The FUSE rows need root. Every file operation on a mount runs in this
// process, never in the daemon serving the mount.
//
//	go run ./bench/run [-quick] [-only REGEXP] [-bin bin/sandfs] [-out bench/results.md]
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
)

// cfg is the run's configuration, from flags.
type cfg struct {
	bin     string // sandfs binary
	work    string // fixtures and scratch
	cache   string // anchors built or installed (bench/.cache)
	repo    string // the module's top directory
	quick   bool
	runs    int   // alternating runs per pair
	runsSet bool  // -runs was given
	bigMiB  int64 // download, PUT, FUSE sequential size
	dur     time.Duration
	creates int    // outside creates of the burst row
	wlRoot  string // where the workload rows' backing roots go ("": tmpfs)
	hpBin   string // passthrough_hp, once built (needPassthroughHP)
}

// group is one set of rows sharing fixtures and daemons.
type group struct {
	name string
	run  func(c *cfg, t *table) error
}

var groups = []group{
	{"download", runDownload},
	{"rps", runRPS},
	{"put", runPut},
	{"grep", runGrep},
	{"list", runList},
	{"fuse", runFUSE},
	{"workload", runWorkload},
	{"watch-latency", runWatchLatency},
	{"watch-burst", runWatchBurst},
	{"start", runStart},
	{"history", runHistory},
	{"forkio", runForkIO},
	{"fleet-rps", fleetRPS},
	{"fleet-memory", fleetMemory},
	{"fleet-nats", fleetNATS},
	{"fleet-replicate", fleetReplicate},
	{"fleet-move", fleetMove},
	{"mcp", runMCP},
}

func main() {
	if spec := os.Getenv(createLoopEnv); spec != "" {
		createLoopChild(spec) // a child of fleet-nats (fleet_nats.go)
	}
	var c cfg
	only := flag.String("only", "", "run only the groups matching `REGEXP` ("+groupNames()+")")
	out := flag.String("out", "bench/results.md", "results file (\"-\": stdout only)")
	flag.StringVar(&c.bin, "bin", "bin/sandfs", "sandfs binary")
	flag.StringVar(&c.work, "work", "/var/tmp/sandfs-bench", "fixtures and scratch `DIR`")
	flag.BoolVar(&c.quick, "quick", false, "short run (about two minutes): fewer runs, smaller sizes")
	flag.IntVar(&c.runs, "runs", 0, "alternating runs per pair (default 5, quick 3)")
	flag.StringVar(&c.wlRoot, "workload-root", "", "put the workload rows' backing roots under `DIR` (default: tmpfs, /dev/shm)")
	flag.Parse()
	flag.Visit(func(f *flag.Flag) { c.runsSet = c.runsSet || f.Name == "runs" })
	var err error
	if c.repo, err = os.Getwd(); err != nil {
		fatal(err)
	}
	c.cache = filepath.Join(c.repo, "bench", ".cache")
	if c.bin, err = filepath.Abs(c.bin); err != nil {
		fatal(err)
	}
	if c.runs == 0 {
		c.runs = 5
		if c.quick {
			c.runs = 3
		}
	}
	c.bigMiB, c.dur, c.creates = 512, 4*time.Second, 100_000
	if c.quick {
		c.bigMiB, c.dur, c.creates = 128, time.Second, 5_000
	}
	var re *regexp.Regexp
	if *only != "" {
		if re, err = regexp.Compile(*only); err != nil {
			fatal(err)
		}
	}
	if err := os.MkdirAll(c.work, 0o755); err != nil {
		fatal(err)
	}
	t := &table{start: time.Now(), load0: loadavg(), quick: c.quick, runs: c.runs}
	for _, g := range groups {
		if re != nil && !re.MatchString(g.name) {
			continue
		}
		logf("== %s", g.name)
		t0 := time.Now()
		if err := g.run(&c, t); err != nil {
			logf("%s: %v", g.name, err)
			t.failed = append(t.failed, g.name+": "+err.Error())
		}
		logf("== %s done in %v", g.name, time.Since(t0).Round(time.Second))
	}
	t.load1 = loadavg()
	md := t.markdown()
	fmt.Print(md)
	if *out != "-" {
		if err := os.WriteFile(*out, []byte(md), 0o644); err != nil {
			fatal(err)
		}
	}
}

func groupNames() string {
	var s []string
	for _, g := range groups {
		s = append(s, g.name)
	}
	return strings.Join(s, ", ")
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", a...)
}

func fatal(err error) {
	logf("%v", err)
	os.Exit(1)
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func kernel() string {
	b, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return strings.TrimSpace(string(b))
}

var _ = runtime.NumCPU
