package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// The workload rows: what people run on a mount, not one system call at a
// time. Four kinds, each over a backing root of its own on the same
// filesystem, all mounted at once: native (the root itself), sandfs's
// mirror (serve --mount, its defaults), go-fuse's loopback example with
// -allow-other, and libfuse's passthrough_ll example with
// allow_other,default_permissions. In each round every kind runs the whole
// sequence below in a fresh directory, in the order of a Williams design
// (order), so a slow moment of the shared machine, and what one kind leaves
// behind, falls on each alike. Every step is a child process of this
// harness (tar, find, grep, git, node, rm), never the daemon serving the
// mount.
//
//  1. unpack: tar -xf of a fixture tarball of 3,156 files of Go's src
//  2. walk: find -printf '%s\n' twice; the second is the warm walk
//  3. grep: grep -rF EINVAL twice; the second is the warm grep
//  4. git: init, add -A, commit, then status twice
//  5. npm: tar -xf of a node_modules made once by npm install, find twice,
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

// wlFigures are seconds per step, a sample per round.
type wlFigures struct {
	unpack, walk1, walk, grep1, grep, commit, status, git []float64
	npmUnpack, npmWalk, require, npm, rm, total           []float64

	walkOut, grepOut, npmOut int // bytes find and grep printed, compared across kinds
}

type wlKind struct {
	name string
	dir  string // where the sequence runs: the root, or the mount of it
	fig  wlFigures
}

func runWorkload(c *cfg, t *table) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the workload rows need root")
	}
	for _, n := range [][2]string{{"fusermount3", "fuse3"}, {"git", "git"}, {"npm", "npm"}, {"node", "nodejs"}} {
		if err := needApt(n[0], n[1]); err != nil {
			return err
		}
	}
	if err := needLoopback(c); err != nil {
		return err
	}
	if err := needPassthroughLL(c); err != nil {
		return err
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
	kinds := []*wlKind{{name: "native"}, {name: "sandfs"}, {name: "loopback"}, {name: "passthrough_ll"}}
	for _, k := range kinds {
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
		}
		if err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
		if p != nil {
			defer p.stop()
			k.dir = mnt
		}
	}
	time.Sleep(time.Second) // the mirror's first walk
	// Four rounds are a whole Williams square of the four kinds: each runs
	// once in each position and once right after each other kind. A round
	// takes about 40 s here, so quick runs half of the square.
	rounds := 4
	if c.quick {
		rounds = 2
	}
	if c.runsSet {
		rounds = c.runs
	}
	for r := 0; r < rounds; r++ {
		logf("workload round %d of %d", r+1, rounds)
		for _, i := range order(len(kinds), r) {
			k := kinds[i]
			if err := wlSequence(&k.fig, filepath.Join(k.dir, fmt.Sprintf("r%d", r)), goTar, npmTar); err != nil {
				return fmt.Errorf("%s, round %d: %w", k.name, r+1, err)
			}
		}
	}
	nat, sfs, lb, pll := &kinds[0].fig, &kinds[1].fig, &kinds[2].fig, &kinds[3].fig
	for _, k := range kinds[1:] {
		if k.fig.walkOut != nat.walkOut || k.fig.grepOut != nat.grepOut || k.fig.npmOut != nat.npmOut {
			m := fmt.Sprintf("workload: through %s, find, grep and the node_modules find printed %d, %d and %d bytes; natively %d, %d and %d",
				k.name, k.fig.walkOut, k.fig.grepOut, k.fig.npmOut, nat.walkOut, nat.grepOut, nat.npmOut)
			logf("%s", m)
			t.notes = append(t.notes, m)
		}
	}
	vs := func(a, b []float64) string {
		if median(b) == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2fx", median(a)/median(b))
	}
	ms := func(v []float64) string { return num(median(v)*1000, "ms") }
	others := func(s func(*wlFigures) []float64) string {
		return fmt.Sprintf("native %s; passthrough_ll %s (sandfs %s it); loopback %s (%s native)",
			ms(s(nat)), ms(s(pll)), vs(s(sfs), s(pll)), ms(s(lb)), vs(s(lb), s(nat)))
	}
	row := func(figure string, s func(*wlFigures) []float64, anchor *wlFigures, want float64, note string) {
		scale := func(v []float64) []float64 {
			out := make([]float64, len(v))
			for i, x := range v {
				out[i] = x * 1000
			}
			return out
		}
		if note != "" {
			note = others(s) + "; " + note
		} else {
			note = others(s)
		}
		t.pair("workload "+figure, "ms", scale(s(sfs)), scale(s(anchor)), atMost, want, note)
	}
	tree := fmt.Sprintf("%s files of Go's src", commas(int64(nGo)))
	row(fmt.Sprintf("1 unpack: `tar -xf` of %s (%d MB), ms: sandfs mirror vs go-fuse loopback -allow-other", tree, fileMB(goTar)),
		func(f *wlFigures) []float64 { return f.unpack }, lb, 0, "")
	row("2 warm walk: `find -printf '%s\\n'` of the tree, the second of two, ms: sandfs mirror vs native",
		func(f *wlFigures) []float64 { return f.walk }, nat, 1.5,
		fmt.Sprintf("the first walk, right after the unpack: sandfs %s, loopback %s, native %s", ms(sfs.walk1), ms(lb.walk1), ms(nat.walk1)))
	row("3 warm grep: `grep -rF EINVAL` of the tree, the second of two, ms: sandfs mirror vs go-fuse loopback -allow-other",
		func(f *wlFigures) []float64 { return f.grep }, lb, 0,
		fmt.Sprintf("the first: sandfs %s, loopback %s, native %s", ms(sfs.grep1), ms(lb.grep1), ms(nat.grep1)))
	row("4 git: `git init`, `add -A`, `commit` of the tree, then `git status` twice, ms: sandfs mirror vs go-fuse loopback -allow-other",
		func(f *wlFigures) []float64 { return f.git }, lb, 1.0,
		fmt.Sprintf("init+add+commit: sandfs %s, loopback %s, native %s; the second status: sandfs %s, loopback %s, native %s",
			ms(sfs.commit), ms(lb.commit), ms(nat.commit), ms(sfs.status), ms(lb.status), ms(nat.status)))
	row(fmt.Sprintf("5 npm: `tar -xf` of a node_modules (%s files, %d MB), `find` twice, `node -e require(…)` of %s, ms: sandfs mirror vs go-fuse loopback -allow-other",
		commas(int64(nNpm)), fileMB(npmTar), strings.Join(wlRequire, ", ")),
		func(f *wlFigures) []float64 { return f.npm }, lb, 0,
		fmt.Sprintf("unpack: sandfs %s, loopback %s, native %s; require: sandfs %s, loopback %s, native %s",
			ms(sfs.npmUnpack), ms(lb.npmUnpack), ms(nat.npmUnpack), ms(sfs.require), ms(lb.require), ms(nat.require)))
	row("5 warm walk of node_modules: `find -printf '%s\\n'`, the second of two, ms: sandfs mirror vs native",
		func(f *wlFigures) []float64 { return f.npmWalk }, nat, 1.5, "")
	row("6 `rm -rf` of the round's directory (both trees and .git), ms: sandfs mirror vs go-fuse loopback -allow-other",
		func(f *wlFigures) []float64 { return f.rm }, lb, 0, "")
	row("whole sequence 1-6, ms: sandfs mirror vs go-fuse loopback -allow-other",
		func(f *wlFigures) []float64 { return f.total }, lb, 0.8, "")
	row("whole sequence 1-6, ms: sandfs mirror vs libfuse passthrough_ll",
		func(f *wlFigures) []float64 { return f.total }, pll, 1.0, "")
	where := "tmpfs (/dev/shm)"
	if c.wlRoot != "" {
		where = c.wlRoot
	} else if !strings.HasPrefix(base, "/dev/shm") {
		where = base
	}
	t.notes = append(t.notes, fmt.Sprintf("workload rows: %d rounds; the four kinds (native, sandfs --mount with its defaults, go-fuse loopback -allow-other, libfuse %s passthrough_ll "+
		"`-f -o allow_other,default_permissions,source=ROOT`, else its defaults: cache=auto, 1 s timeouts, no writeback, no xattr, no flock, multithreaded) "+
		"each over a root of its own on %s, all mounted at once and taking turns round by round; each step is a child process of the harness, in a fresh directory per round; "+
		"a sequence frees about 9,800 inodes, which on this VM's journal-less ext4 makes the next creates slower the more ran before (see bench/README.md)",
		rounds, fuseVersion(), where))
	return nil
}

// wlSequence runs the whole sequence once in the fresh directory d.
func wlSequence(f *wlFigures, d, goTar, npmTar string) error {
	os.RemoveAll(d)
	if err := os.Mkdir(d, 0o755); err != nil {
		return err
	}
	src, npm := filepath.Join(d, "src"), filepath.Join(d, "npm")
	t0 := time.Now()
	var out int
	step := func(dst *[]float64, dir string, cmd ...string) error {
		var err error
		var v float64
		v, out, err = child(dir, cmd...)
		if dst != nil {
			*dst = append(*dst, v)
		}
		return err
	}
	if err := step(&f.unpack, d, "tar", "-xf", goTar); err != nil {
		return err
	}
	if err := step(&f.walk1, d, "find", "src", "-printf", `%s\n`); err != nil {
		return err
	}
	if err := step(&f.walk, d, "find", "src", "-printf", `%s\n`); err != nil {
		return err
	}
	f.walkOut = out
	if err := step(&f.grep1, d, "grep", "-rF", "EINVAL", "src"); err != nil {
		return err
	}
	if err := step(&f.grep, d, "grep", "-rF", "EINVAL", "src"); err != nil {
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
	n := time.Now()
	if err := os.Mkdir(npm, 0o755); err != nil {
		return err
	}
	if err := step(&f.npmUnpack, npm, "tar", "-xf", npmTar); err != nil {
		return err
	}
	if err := step(nil, npm, "find", "node_modules", "-printf", `%s\n`); err != nil {
		return err
	}
	if err := step(&f.npmWalk, npm, "find", "node_modules", "-printf", `%s\n`); err != nil {
		return err
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
	if err := step(&f.rm, filepath.Dir(d), "rm", "-rf", filepath.Base(d)); err != nil {
		return err
	}
	f.total = append(f.total, time.Since(t0).Seconds())
	return nil
}

// child runs cmd in dir and gives its wall time in seconds and how many
// bytes it printed.
func child(dir string, cmd ...string) (float64, int, error) {
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
	if err != nil {
		return d, int(n), fmt.Errorf("%s in %s: %v: %s", strings.Join(cmd, " "), dir, err, tail(stderr.String()))
	}
	return d, int(n), nil
}

type countWriter int

func (w *countWriter) Write(p []byte) (int, error) { *w += countWriter(len(p)); return len(p), nil }
