package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// The workload rows: what people run on a mount, not one system call at a
// time. Six kinds, each over a backing root of its own on the same
// filesystem, all mounted at once: native (the root itself), sandfs's
// mirror (serve --mount, its defaults), go-fuse's loopback example with
// -allow-other, libfuse's passthrough_ll and passthrough_hp examples
// with allow_other,default_permissions, and the mirror again with
// --fuse-uring where the kernel has the ring (workload_uring.go). In each round every kind runs the whole
// sequence below in a fresh directory, in the order of a Williams design
// (order), so a slow moment of the shared machine, and what one kind leaves
// behind, falls on each alike. Every step is a child process of this
// harness (tar, find, grep, git, node, rm), never the daemon serving the
// mount.
//
//  1. unpack: tar -xf of a fixture tarball of 3,156 files of Go's src
//  2. walk: find -printf '%s\n' three times; the second is the warm walk,
//     the third the steady one
//  3. grep: grep -rF EINVAL twice; the second is the warm grep
//  4. git: init, add -A, commit, then status twice
//  5. npm: tar -xf of a node_modules made once by npm install, find three times,
//     node -e "require(...)" of three of its packages
//  6. rm -rf of the round's directory
//
// The roots are on tmpfs by default (-workload-root puts them elsewhere):
// this VM's ext4 has no journal, and without one ext4 skips, at every
// inode it allocates, each inode of the group freed in the last minute or
// more (recently_deleted); the sequence frees about 9,800 inodes, so the
// next sequence's creates cost more the more sequences ran before it. Four
// native sequences back to back on the disk took 0.96, 1.25, 2.63 and
// 2.96 s for the git step and 0.08, 0.62, 1.25 and 1.83 s for the npm
// unpack: on the disk the rows would measure the order of the runs.
//
// Besides wall time, each sequence counts the requests the kernel sent to
// its kind's daemon, step by step (fusetrace.go), and takes the CPU time
// of the daemon (utime+stime of its process, all its threads, from
// /proc/PID/stat) and of the steps' processes (their rusage, with the
// children they waited for) over the whole sequence.

// wlFigures are seconds per step, a sample per round.
type wlFigures struct {
	unpack, walk1, walk, walk3, grep1, grep, commit, status, git []float64
	npmUnpack, npmWalk, npmWalk3, require, npm, rm, total        []float64

	req                map[string][]float64 // requests sent to the daemon per step (wlSteps), a sample per round
	ops                map[string]int       // requests by opcode, all rounds
	daemonCPU, workCPU []float64            // seconds of CPU per sequence: the daemon's, the steps'

	walkOut, grepOut, npmOut int // bytes find and grep printed, compared across kinds
}

// wlSteps are the steps requests are counted by; "total" is their sum.
var wlSteps = []string{"unpack", "walk1", "walk", "walk3", "grep1", "grep", "git", "npm", "rm"}

type wlKind struct {
	name string
	dir  string // where the sequence runs: the root, or the mount of it
	fig  wlFigures
	pid  int    // the daemon (0: native)
	conn uint32 // the mount's FUSE connection
}

// wlKinds are the kinds in the order of the rows' figures.
var wlKinds = []string{"native", "sandfs", "loopback", "passthrough_ll", "passthrough_hp", uringKind}

func runWorkload(c *cfg, t *table) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the workload rows need root")
	}
	for _, n := range [][2]string{{"fusermount3", "fuse3"}, {"git", "git"}, {"npm", "npm"}, {"node", "nodejs"}} {
		if err := needApt(n[0], n[1]); err != nil {
			return err
		}
	}
	for _, need := range []func(*cfg) error{needLoopback, needPassthroughLL, needPassthroughHP} {
		if err := need(c); err != nil {
			return err
		}
	}
	goTar, nGo, err := wlGoTar(c)
	if err != nil {
		return err
	}
	npmTar, nNpm, err := wlNpmTar(c)
	if err != nil {
		return err
	}
	var base string
	if c.wlRoot != "" {
		base = filepath.Join(c.wlRoot, "sandfs-bench-workload")
		os.RemoveAll(base)
		err = os.MkdirAll(base, 0o755)
	} else {
		base, err = tmpfsDir(c, "workload")
	}
	if err != nil {
		return err
	}
	defer os.RemoveAll(base)
	restoreURing, withURing, err := wlURingOn() // workload_uring.go
	if err != nil {
		return err
	}
	defer restoreURing()
	var kinds []*wlKind
	var conns []uint32
	var uringProc *proc
	for _, name := range wlKinds {
		if name == uringKind && !withURing {
			t.notes = append(t.notes, "workload: no "+uringKind+" kind: this kernel has no "+enableURing)
			continue
		}
		k := &wlKind{name: name}
		kinds = append(kinds, k)
		root := filepath.Join(base, k.name)
		if err := os.MkdirAll(root, 0o755); err != nil {
			return err
		}
		k.dir = root
		mnt := filepath.Join(c.work, "mnt-wl-"+k.name)
		var p *proc
		switch k.name {
		case "sandfs":
			p, err = startMount(c, root, mnt)
		case "loopback":
			p, err = startLoopback(c, root, mnt, "-allow-other")
		case "passthrough_ll":
			p, err = startPassthroughLL(c, root, mnt)
		case "passthrough_hp":
			p, err = startPassthroughHP(c, root, mnt)
		case uringKind:
			p, err = startMount(c, root, mnt, "--fuse-uring")
			uringProc = p
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
		if p != nil {
			defer p.stop()
			k.dir, k.pid = mnt, p.pid()
			if k.conn, err = fuseConn(mnt); err != nil {
				return fmt.Errorf("%s: %w", k.name, err)
			}
			conns = append(conns, k.conn)
		}
	}
	time.Sleep(time.Second) // the mirror's first walk
	tr, err := startFuseTrace(conns)
	if err != nil {
		logf("workload: no request counts: %v", err)
		t.notes = append(t.notes, "workload: no request counts: "+err.Error())
		tr = nil
	} else {
		defer tr.close()
	}
	// Five rounds: each kind runs in as many positions of the Williams
	// order (a full Latin square of six kinds would take six rounds, one
	// balancing which kind runs right after which twelve). A round takes
	// about a minute here, so quick runs two.
	rounds := 5
	if c.quick {
		rounds = 2
	}
	if c.runsSet {
		rounds = c.runs
	}
	lost := 0
	for r := 0; r < rounds; r++ {
		logf("workload round %d of %d", r+1, rounds)
		for _, i := range order(len(kinds), r) {
			k := kinds[i]
			m := wlMeter{kind: k}
			if k.pid != 0 {
				m.trace = tr
			}
			if err := wlSequence(&m, filepath.Join(k.dir, fmt.Sprintf("r%d", r)), goTar, npmTar); err != nil {
				return fmt.Errorf("%s, round %d: %w", k.name, r+1, err)
			}
			lost += m.lost
		}
	}
	if lost > 0 {
		t.notes = append(t.notes, fmt.Sprintf("workload: the trace buffer dropped %d events: the request counts are short by as many", lost))
	}
	nat := &kinds[0].fig
	for _, k := range kinds[1:] {
		if k.fig.walkOut != nat.walkOut || k.fig.grepOut != nat.grepOut || k.fig.npmOut != nat.npmOut {
			m := fmt.Sprintf("workload: through %s, find, grep and the node_modules find printed %d, %d and %d bytes; natively %d, %d and %d",
				k.name, k.fig.walkOut, k.fig.grepOut, k.fig.npmOut, nat.walkOut, nat.grepOut, nat.npmOut)
			logf("%s", m)
			t.notes = append(t.notes, m)
		}
	}
	figs := make([]*wlFigures, len(kinds))
	for i, k := range kinds {
		figs[i] = &k.fig
	}
	wlRows(t, figs, wlInfo{
		goFiles: nGo, goMB: fileMB(goTar), npmFiles: nNpm, npmMB: fileMB(npmTar),
		rounds: rounds, traced: tr != nil, where: wlWhere(c, base),
	})
	if uringProc != nil {
		served, err := uringServed(uringProc)
		if err != nil || served == 0 {
			t.notes = append(t.notes, fmt.Sprintf("workload: the %s kind served no request over the ring (%v): its rows are left out", uringKind, err))
			return nil
		}
		wlURingRows(t, figs[5], figs[1], figs[4], tr != nil, served)
	}
	return nil
}

func wlWhere(c *cfg, base string) string {
	switch {
	case c.wlRoot != "":
		return c.wlRoot
	case !strings.HasPrefix(base, "/dev/shm"):
		return base
	}
	return "tmpfs (/dev/shm)"
}

// wlMeter is what one sequence measures besides wall time, into its
// kind's figures.
type wlMeter struct {
	kind   *wlKind
	trace  *fuseTrace    // nil: no requests to count (native, or no tracing)
	paused time.Duration // spent waiting for the trace reader, left out of the times
	lost   int
}

// cut attributes the requests sent since the last cut to step ("": none).
func (m *wlMeter) cut(step string) error {
	if m.trace == nil {
		return nil
	}
	t := time.Now()
	defer func() { m.paused += time.Since(t) }()
	c, err := m.trace.cut()
	if err != nil {
		return err
	}
	m.lost += c.lost
	if step == "" {
		return nil
	}
	f := &m.kind.fig
	if f.req == nil {
		f.req, f.ops = map[string][]float64{}, map[string]int{}
	}
	n := float64(c.total(m.kind.conn))
	f.req[step] = append(f.req[step], n)
	if last := len(f.req["total"]); last < len(f.req[step]) {
		f.req["total"] = append(f.req["total"], 0)
	}
	f.req["total"][len(f.req["total"])-1] += n
	c.byOp(m.kind.conn, f.ops)
	return nil
}

// wlSequence runs the whole sequence once in the fresh directory d.
func wlSequence(m *wlMeter, d, goTar, npmTar string) error {
	f := &m.kind.fig
	if err := m.cut(""); err != nil {
		return err
	}
	cpu0 := procCPU(m.kind.pid)
	os.RemoveAll(d)
	if err := os.Mkdir(d, 0o755); err != nil {
		return err
	}
	src, npm := filepath.Join(d, "src"), filepath.Join(d, "npm")
	t0 := time.Now()
	var out int
	var work float64
	step := func(dst *[]float64, dir string, cmd ...string) error {
		var err error
		var v, cpu float64
		v, cpu, out, err = child(dir, cmd...)
		work += cpu
		if dst != nil {
			*dst = append(*dst, v)
		}
		return err
	}
	// run is a step counted on its own: its command, then the cut.
	run := func(name string, dst *[]float64, dir string, cmd ...string) error {
		if err := step(dst, dir, cmd...); err != nil {
			return err
		}
		return m.cut(name)
	}
	if err := run("unpack", &f.unpack, d, "tar", "-xf", goTar); err != nil {
		return err
	}
	for _, w := range []struct {
		name string
		dst  *[]float64
	}{{"walk1", &f.walk1}, {"walk", &f.walk}, {"walk3", &f.walk3}} {
		if err := run(w.name, w.dst, d, "find", "src", "-printf", `%s\n`); err != nil {
			return err
		}
	}
	f.walkOut = out
	if err := run("grep1", &f.grep1, d, "grep", "-rF", "EINVAL", "src"); err != nil {
		return err
	}
	if err := run("grep", &f.grep, d, "grep", "-rF", "EINVAL", "src"); err != nil {
		return err
	}
	f.grepOut = out
	g := time.Now()
	for _, a := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "x"}} {
		if err := step(nil, src, append([]string{"git"}, a...)...); err != nil {
			return err
		}
	}
	f.commit = append(f.commit, time.Since(g).Seconds())
	if err := step(nil, src, "git", "status"); err != nil {
		return err
	}
	if err := step(&f.status, src, "git", "status"); err != nil {
		return err
	}
	f.git = append(f.git, time.Since(g).Seconds())
	if err := m.cut("git"); err != nil {
		return err
	}
	n := time.Now()
	if err := os.Mkdir(npm, 0o755); err != nil {
		return err
	}
	if err := step(&f.npmUnpack, npm, "tar", "-xf", npmTar); err != nil {
		return err
	}
	for _, dst := range []*[]float64{nil, &f.npmWalk, &f.npmWalk3} {
		if err := step(dst, npm, "find", "node_modules", "-printf", `%s\n`); err != nil {
			return err
		}
	}
	f.npmOut = out
	js := ""
	for _, p := range wlRequire {
		js += fmt.Sprintf("require(%q);", p)
	}
	if err := step(&f.require, npm, "node", "-e", js); err != nil {
		return err
	}
	f.npm = append(f.npm, time.Since(n).Seconds())
	if err := m.cut("npm"); err != nil {
		return err
	}
	if err := run("rm", &f.rm, filepath.Dir(d), "rm", "-rf", filepath.Base(d)); err != nil {
		return err
	}
	f.total = append(f.total, (time.Since(t0) - m.paused).Seconds())
	if m.kind.pid != 0 {
		f.daemonCPU = append(f.daemonCPU, procCPU(m.kind.pid)-cpu0)
	} else {
		f.daemonCPU = append(f.daemonCPU, 0)
	}
	f.workCPU = append(f.workCPU, work)
	return nil
}

// child runs cmd in dir and gives its wall time and CPU time (its rusage:
// user and system, with the children it waited for) in seconds, and how
// many bytes it printed.
func child(dir string, cmd ...string) (float64, float64, int, error) {
	x := exec.Command(cmd[0], cmd[1:]...)
	x.Dir = dir
	x.Env = append(os.Environ(), "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@localhost",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@localhost",
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null")
	var n countWriter
	var stderr bytes.Buffer
	x.Stdout, x.Stderr = &n, &stderr
	t := time.Now()
	err := x.Run()
	d := time.Since(t).Seconds()
	var cpu float64
	if x.ProcessState != nil {
		cpu = (x.ProcessState.UserTime() + x.ProcessState.SystemTime()).Seconds()
	}
	if err != nil {
		return d, cpu, int(n), fmt.Errorf("%s in %s: %v: %s", strings.Join(cmd, " "), dir, err, tail(stderr.String()))
	}
	return d, cpu, int(n), nil
}

type countWriter int

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }

// procCPU is the CPU time in seconds of process pid and all its threads,
// living and gone: utime+stime of /proc/PID/stat, in clock ticks of 10 ms.
func procCPU(pid int) float64 {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return statCPU(string(b))
}

// statCPU reads utime and stime (fields 14 and 15) of a /proc/PID/stat
// line, whose second field, the command in parentheses, may hold spaces.
func statCPU(stat string) float64 {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(stat[i+1:]) // from field 3, the state
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	s, _ := strconv.ParseFloat(f[12], 64)
	return (u + s) / clockTicks
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on Linux.
const clockTicks = 100
