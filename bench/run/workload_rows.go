package main

import (
	"fmt"
	"sort"
	"strings"
)

// wlInfo is what the workload rows say of the run besides the figures.
type wlInfo struct {
	goFiles, npmFiles int
	goMB, npmMB       int64
	rounds            int
	traced            bool   // the requests were counted
	where             string // the backing roots' filesystem
}

// wlRows adds the workload rows to t; figs are in the order of wlKinds.
func wlRows(t *table, figs []*wlFigures, in wlInfo) {
	nat, sfs, lb, pll, php := figs[0], figs[1], figs[2], figs[3], figs[4]
	ms := func(v []float64) string { return num(median(v)*1000, "ms") }
	others := func(s func(*wlFigures) []float64) string {
		return fmt.Sprintf("native %s; passthrough_hp %s (sandfs %s it); passthrough_ll %s (sandfs %s it); loopback %s (%s native)",
			ms(s(nat)), ms(s(php)), ratioX(s(sfs), s(php)), ms(s(pll)), ratioX(s(sfs), s(pll)), ms(s(lb)), ratioX(s(lb), s(nat)))
	}
	row := func(figure string, s func(*wlFigures) []float64, anchor *wlFigures, want float64, note string) {
		if note != "" {
			note = others(s) + "; " + note
		} else {
			note = others(s)
		}
		t.pair("workload "+figure, "ms", scaled(s(sfs), 1000), scaled(s(anchor), 1000), atMost, want, note)
	}
	three := func(s func(*wlFigures) []float64) string {
		return fmt.Sprintf("sandfs %s, passthrough_hp %s, loopback %s, native %s", ms(s(sfs)), ms(s(php)), ms(s(lb)), ms(s(nat)))
	}
	vsLB := "ms: sandfs mirror vs go-fuse loopback -allow-other"
	row(fmt.Sprintf("1 unpack: `tar -xf` of %s files of Go's src (%d MB), %s", commas(int64(in.goFiles)), in.goMB, vsLB),
		func(f *wlFigures) []float64 { return f.unpack }, lb, 0, "")
	row("2 warm walk: `find -printf '%s\\n'` of the tree, the second of three, ms: sandfs mirror vs native",
		func(f *wlFigures) []float64 { return f.walk }, nat, 1.5,
		"the first walk, right after the unpack: "+three(func(f *wlFigures) []float64 { return f.walk1 }))
	row("2 steady walk: `find -printf '%s\\n'` of the tree, the third of three, ms: sandfs mirror vs native",
		func(f *wlFigures) []float64 { return f.walk3 }, nat, 1.2, "")
	row("3 warm grep: `grep -rF EINVAL` of the tree, the second of two, "+vsLB,
		func(f *wlFigures) []float64 { return f.grep }, lb, 0,
		"the first: "+three(func(f *wlFigures) []float64 { return f.grep1 }))
	row("4 git: `git init`, `add -A`, `commit` of the tree, then `git status` twice, "+vsLB,
		func(f *wlFigures) []float64 { return f.git }, lb, 0.8,
		"init+add+commit: "+three(func(f *wlFigures) []float64 { return f.commit })+
			"; the second status: "+three(func(f *wlFigures) []float64 { return f.status }))
	row(fmt.Sprintf("5 npm: `tar -xf` of a node_modules (%s files, %d MB), `find` three times, `node -e require(…)` of %s, %s",
		commas(int64(in.npmFiles)), in.npmMB, strings.Join(wlRequire, ", "), vsLB),
		func(f *wlFigures) []float64 { return f.npm }, lb, 0,
		"unpack: "+three(func(f *wlFigures) []float64 { return f.npmUnpack })+
			"; require: "+three(func(f *wlFigures) []float64 { return f.require }))
	row("5 warm walk of node_modules: `find -printf '%s\\n'`, the second of three, ms: sandfs mirror vs native",
		func(f *wlFigures) []float64 { return f.npmWalk }, nat, 1.5, "")
	row("5 steady walk of node_modules: `find -printf '%s\\n'`, the third of three, ms: sandfs mirror vs native",
		func(f *wlFigures) []float64 { return f.npmWalk3 }, nat, 1.2, "")
	row("6 `rm -rf` of the round's directory (both trees and .git), "+vsLB,
		func(f *wlFigures) []float64 { return f.rm }, lb, 0, "")
	total := func(f *wlFigures) []float64 { return f.total }
	row("whole sequence 1-6, "+vsLB, total, lb, 0.8, "")
	row("whole sequence 1-6, ms: sandfs mirror vs libfuse passthrough_ll", total, pll, 1.0, "")
	row("whole sequence 1-6, ms: sandfs mirror vs libfuse passthrough_hp", total, php, 1.2, "")

	if in.traced {
		wlRequestRows(t, sfs, lb, pll, php)
	}
	// The CPU rows: what the mirror costs the machine, in the daemon and
	// in all.
	perReq := func(f *wlFigures) []float64 { return perRequest(f.daemonCPU, f.req["total"]) }
	us := func(v []float64) string { return num(median(v), "µs") }
	if in.traced {
		t.pair("workload daemon CPU per request, whole sequence 1-6, µs: sandfs mirror vs libfuse passthrough_hp", "µs",
			perReq(sfs), perReq(php), atMost, 1.5,
			fmt.Sprintf("the daemon's utime+stime over the sequence ÷ the requests sent to it, per round; loopback %s (sandfs %s it); passthrough_ll %s (sandfs %s it); "+
				"daemon CPU per sequence: sandfs %s, passthrough_hp %s, loopback %s, passthrough_ll %s",
				us(perReq(lb)), ratioX(perReq(sfs), perReq(lb)), us(perReq(pll)), ratioX(perReq(sfs), perReq(pll)),
				ms(sfs.daemonCPU), ms(php.daemonCPU), ms(lb.daemonCPU), ms(pll.daemonCPU)))
	}
	all := func(f *wlFigures) []float64 { return sumRounds(f.daemonCPU, f.workCPU) }
	work := func(f *wlFigures) []float64 { return f.workCPU }
	t.pair("workload whole sequence CPU (workload + daemon), ms: sandfs mirror vs libfuse passthrough_hp", "ms",
		scaled(all(sfs), 1000), scaled(all(php), 1000), atMost, 0,
		fmt.Sprintf("the steps' processes (rusage, with the children they waited for) plus the daemon's utime+stime; loopback %s (sandfs %s it); passthrough_ll %s (sandfs %s it); native %s; "+
			"the steps alone: %s, passthrough_ll %s",
			ms(all(lb)), ratioX(all(sfs), all(lb)), ms(all(pll)), ratioX(all(sfs), all(pll)), ms(all(nat)),
			three(work), ms(work(pll))))

	t.notes = append(t.notes, fmt.Sprintf("workload rows: %[1]d rounds; the kinds (native, sandfs --mount with its defaults, the same with --fuse-uring where the kernel has enable_uring (set to Y for the group, put back after), go-fuse loopback -allow-other, "+
		"libfuse %[2]s passthrough_ll `-f -o allow_other,default_permissions,source=ROOT`, else its defaults: cache=auto, 1 s timeouts, no writeback, no xattr, no flock, multithreaded; "+
		"libfuse's passthrough_hp %[3]s built against libfuse %[2]s, `--foreground -o allow_other ROOT MNT` (it adds default_permissions), else its defaults: "+
		"a day's entry and attribute timeouts, writeback cache, flock, splice, multithreaded) "+
		"each over a root of its own on %[4]s, all mounted at once and taking turns round by round; each step is a child process of the harness, in a fresh directory per round; "+
		"a sequence frees about 9,800 inodes, which on this VM's journal-less ext4 makes the next creates slower the more ran before (see bench/README.md)",
		in.rounds, fuseVersion(), hpVersion, in.where))
	if in.traced {
		t.notes = append(t.notes, "workload requests per sequence by opcode (the tracepoint fuse_request_send; FORGETs go apart and are not seen): "+
			"sandfs "+topOps(sfs.ops, in.rounds, 8)+"; passthrough_hp "+topOps(php.ops, in.rounds, 8)+
			"; loopback "+topOps(lb.ops, in.rounds, 8)+"; passthrough_ll "+topOps(pll.ops, in.rounds, 8))
	}
}

// wlRequestRows: the requests the kernel sent each kind's daemon, step by
// step, sandfs against passthrough_hp; native has no daemon.
func wlRequestRows(t *table, sfs, lb, pll, php *wlFigures) {
	n := func(f *wlFigures, step string) string { return sampled(f.req[step], "req") }
	row := func(figure, step, note string) {
		s := fmt.Sprintf("loopback %s, passthrough_ll %s; native none (no daemon)", n(lb, step), n(pll, step))
		if note != "" {
			s += "; " + note
		}
		t.pair("workload requests sent to the daemon, "+figure+": sandfs mirror vs libfuse passthrough_hp", "req",
			sfs.req[step], php.req[step], atMost, 0, s)
	}
	firstThird := func(first, third string) string {
		return fmt.Sprintf("%s: sandfs %s, passthrough_hp %s, loopback %s", first, n(sfs, third), n(php, third), n(lb, third))
	}
	row("1 unpack", "unpack", "")
	row("2 warm walk (the second)", "walk", firstThird("the first", "walk1")+"; "+firstThird("the third", "walk3"))
	row("3 warm grep (the second)", "grep", firstThird("the first", "grep1"))
	row("4 git", "git", "")
	row("5 npm", "npm", "")
	row("6 rm -rf", "rm", "")
	row("whole sequence 1-6", "total", "")
}

// ratioX is median(a)/median(b) as "0.93x", or n/a.
func ratioX(a, b []float64) string {
	if median(b) == 0 || median(a) == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", median(a)/median(b))
}

func scaled(v []float64, k float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * k
	}
	return out
}

// perRequest is µs of cpu (seconds) per request, round by round; a round
// with no request counted gives none.
func perRequest(cpu, req []float64) []float64 {
	var out []float64
	for i := 0; i < len(cpu) && i < len(req); i++ {
		if req[i] > 0 {
			out = append(out, cpu[i]*1e6/req[i])
		}
	}
	return out
}

// sumRounds adds two figures round by round.
func sumRounds(a, b []float64) []float64 {
	var out []float64
	for i := 0; i < len(a) && i < len(b); i++ {
		out = append(out, a[i]+b[i])
	}
	return out
}

// topOps is the n commonest opcodes of ops, per round, as "LOOKUP 1,234,
// GETATTR 567, … (others 89)".
func topOps(ops map[string]int, rounds, n int) string {
	if len(ops) == 0 || rounds == 0 {
		return "none"
	}
	type op struct {
		name string
		n    int
	}
	var all []op
	for k, v := range ops {
		all = append(all, op{k, v})
	}
	sort.Slice(all, func(i, j int) bool {
		if all[i].n != all[j].n {
			return all[i].n > all[j].n
		}
		return all[i].name < all[j].name
	})
	var parts []string
	rest := 0
	for i, o := range all {
		if i < n {
			parts = append(parts, fmt.Sprintf("%s %s", o.name, commas(int64((o.n+rounds/2)/rounds))))
		} else {
			rest += o.n
		}
	}
	s := strings.Join(parts, ", ")
	if rest > 0 {
		s += fmt.Sprintf(" (others %s)", commas(int64((rest+rounds/2)/rounds)))
	}
	return s
}
