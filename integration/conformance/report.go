package main

// The closing summary: the root's results beside the mount's, and the
// exit code a mount-only failure gives.

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"
)

// report prints both summaries and returns 1 when the mount fails a test
// that passes on the root.
func report(w io.Writer, fsType string, rootRes, mntRes map[string]*fileResult, rootTime, mntTime time.Duration, c config) int {
	rootFails := failures(rootRes)
	onRoot := map[failure]bool{}
	for _, f := range rootFails {
		onRoot[f] = true
	}
	// A file the root ran and the mount did not is the mount's failure.
	for name := range rootRes {
		if _, ok := mntRes[name]; !ok && mntRes != nil {
			fr := newFileResult()
			fr.planned = 0
			fr.failed[0] = "not run on the mount"
			mntRes[name] = fr
		}
	}
	var mine, both []failure
	for _, f := range failures(mntRes) {
		if onRoot[f] {
			both = append(both, f)
		} else {
			mine = append(mine, f)
		}
	}
	line := func(half string, res map[string]*fileResult, d time.Duration, fails []failure) {
		files, tests := 0, 0
		for _, fr := range res {
			files++
			tests += max(fr.planned, 0)
		}
		fmt.Fprintf(w, "%-6s %d files, %d tests, %d failed, %s\n", half+":", files, tests, len(fails), d.Round(time.Second))
	}
	fmt.Fprintf(w, "\n== pjdfstest as root, umask 022, on %s\n", fsType)
	line("root", rootRes, rootTime, rootFails)
	for _, l := range byFile(rootFails) {
		fmt.Fprintf(w, "  root fails %s\n", l)
	}
	mode := "sandfs serve --mount"
	if len(c.args) > 0 {
		mode += " " + strings.Join(c.args, " ")
	}
	if mntRes != nil {
		line("mount", mntRes, mntTime, append(append([]failure{}, mine...), both...))
		fmt.Fprintf(w, "  (%s; %d of its failures fail on the root too, counted as the root's)\n", mode, len(both))
		for _, l := range byFile(mine) {
			fmt.Fprintf(w, "  mount fails %s\n", l)
		}
		shown := 0
		for _, f := range mine {
			if shown == 20 {
				fmt.Fprintf(w, "  … %d more: see %s/mount-*.log\n", len(mine)-shown, c.logs)
				break
			}
			fmt.Fprintf(w, "    %s %s\n", f, shorten(mntRes[f.file].failed[f.n], 160))
			shown++
		}
		// Where the mount planned differently (pjdfstest picks tests by
		// filesystem type), numbers are compared as they are.
		var diff []string
		for name, fr := range rootRes {
			if m := mntRes[name]; m != nil && m.planned != fr.planned {
				diff = append(diff, fmt.Sprintf("%s (root %d, mount %d)", name, fr.planned, m.planned))
			}
		}
		sort.Strings(diff)
		if len(diff) > 0 {
			fmt.Fprintf(w, "  planned differently: %s\n", strings.Join(diff, ", "))
		}
	}
	tests := 0
	for _, fr := range mntRes {
		tests += max(fr.planned, 0)
	}
	fmt.Fprintf(w, "conformance: %d passed, %d failed, %d skipped\n", max(tests-len(mine)-len(both), 0), len(mine), len(both))
	if len(mine) > 0 || mntRes == nil {
		return 1
	}
	return 0
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n/2] + "…" + s[len(s)-n/2:]
}
