package main

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// fileResult is what one .t file of the suite gave.
type fileResult struct {
	planned  int            // the plan's N (1..N); -1 when no plan was seen
	skipAll  bool           // 1..0: the file skipped itself
	seen     map[int]bool   // test numbers that reported
	failed   map[int]string // failing test number -> its line (0: the file itself)
	todo     int            // "not ok N # TODO": expected failures, not counted
	problems []string       // prove's parse errors and wait statuses
}

func newFileResult() *fileResult {
	return &fileResult{planned: -1, seen: map[int]bool{}, failed: map[int]string{}}
}

var (
	reHeader  = regexp.MustCompile(`^(\S+\.t) \.+ ?(.*)$`)
	rePlan    = regexp.MustCompile(`^1\.\.(\d+)(.*)$`)
	reTest    = regexp.MustCompile(`^(not )?ok (\d+)(.*)$`)
	reSummary = regexp.MustCompile(`^(\S+\.t) \(Wstat: (\d+)`)
	reFailed  = regexp.MustCompile(`^\s+Failed tests?:\s+(.*)$`)
	reRanges  = regexp.MustCompile(`^\s+[0-9][0-9, -]*$`)
	reProblem = regexp.MustCompile(`^\s+(Parse errors|Non-zero exit status|Non-zero wait status): (.*)$`)
)

// parseProve reads the output of `prove -r -v DIR/...` and returns the
// results by file name relative to testsDir (chmod/00.t). It reads each
// file's own TAP lines, then cross-checks them with prove's Test Summary
// Report: a number prove lists as failed counts as failed, and a planned
// number that never reported (a script that died, a bad plan) too.
func parseProve(r io.Reader, testsDir string) (map[string]*fileResult, error) {
	res := map[string]*fileResult{}
	get := func(path string) *fileResult {
		name := strings.TrimPrefix(path, strings.TrimSuffix(testsDir, "/")+"/")
		fr := res[name]
		if fr == nil {
			fr = newFileResult()
			res[name] = fr
		}
		return fr
	}
	var cur *fileResult
	inSummary := false
	lastFailed := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24) // PATH_MAX tests print long lines
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "Test Summary Report") {
			inSummary = true
			cur = nil
			continue
		}
		if inSummary {
			if m := reSummary.FindStringSubmatch(line); m != nil {
				cur = get(m[1])
				if m[2] != "0" {
					cur.problems = append(cur.problems, "wait status "+m[2])
				}
				lastFailed = false
				continue
			}
			if cur == nil {
				continue
			}
			if m := reFailed.FindStringSubmatch(line); m != nil {
				addRanges(cur, m[1])
				lastFailed = true
				continue
			}
			if lastFailed && reRanges.MatchString(line) {
				addRanges(cur, line)
				continue
			}
			lastFailed = false
			if m := reProblem.FindStringSubmatch(line); m != nil {
				cur.problems = append(cur.problems, m[1]+": "+strings.TrimSpace(m[2]))
			}
			continue
		}
		if m := reHeader.FindStringSubmatch(line); m != nil {
			cur = get(m[1])
			line = m[2]
			if strings.HasPrefix(line, "skipped:") {
				cur.planned, cur.skipAll = 0, true
			}
			if line == "" {
				continue
			}
		}
		if cur == nil {
			continue
		}
		if m := rePlan.FindStringSubmatch(line); m != nil && cur.planned < 0 {
			cur.planned, _ = strconv.Atoi(m[1])
			if cur.planned == 0 {
				cur.skipAll = true
			}
			continue
		}
		if m := reTest.FindStringSubmatch(line); m != nil {
			n, _ := strconv.Atoi(m[2])
			cur.seen[n] = true
			if m[1] != "" {
				if strings.Contains(m[3], "# TODO") {
					cur.todo++
				} else {
					cur.failed[n] = line
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		return res, err
	}
	for _, fr := range res {
		if fr.planned < 0 {
			fr.failed[0] = "no plan (" + strings.Join(fr.problems, "; ") + ")"
			continue
		}
		for n := 1; n <= fr.planned; n++ {
			if !fr.seen[n] {
				if _, ok := fr.failed[n]; !ok {
					fr.failed[n] = fmt.Sprintf("not ok %d - never reported (%s)", n, strings.Join(fr.problems, "; "))
				}
			}
		}
	}
	return res, nil
}

// addRanges adds prove's "3, 5-7" to fr's failures.
func addRanges(fr *fileResult, s string) {
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(strings.TrimSpace(lo))
		b := a
		var err2 error
		if isRange {
			b, err2 = strconv.Atoi(strings.TrimSpace(hi))
		}
		if err1 != nil || err2 != nil {
			continue
		}
		for n := a; n <= b; n++ {
			if _, ok := fr.failed[n]; !ok {
				fr.failed[n] = fmt.Sprintf("not ok %d - (listed failed by prove)", n)
			}
		}
	}
}

// failure is one failing test: file and number.
type failure struct {
	file string
	n    int
}

func (f failure) String() string { return fmt.Sprintf("%s:%d", f.file, f.n) }

// failures lists every failing test of res, sorted.
func failures(res map[string]*fileResult) []failure {
	var out []failure
	for name, fr := range res {
		for n := range fr.failed {
			out = append(out, failure{name, n})
		}
	}
	sortFailures(out)
	return out
}

func sortFailures(fs []failure) {
	sort.Slice(fs, func(i, j int) bool {
		if fs[i].file != fs[j].file {
			return fs[i].file < fs[j].file
		}
		return fs[i].n < fs[j].n
	})
}

// compact writes numbers as prove does: 1-5, 7.
func compact(ns []int) string {
	sort.Ints(ns)
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		} else {
			parts = append(parts, strconv.Itoa(ns[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

// byFile groups failures as "file: 1-5, 7" lines.
func byFile(fs []failure) []string {
	var lines []string
	for i := 0; i < len(fs); {
		j := i
		var ns []int
		for j < len(fs) && fs[j].file == fs[i].file {
			ns = append(ns, fs[j].n)
			j++
		}
		lines = append(lines, fmt.Sprintf("%s: %s", fs[i].file, compact(ns)))
		i = j
	}
	return lines
}
