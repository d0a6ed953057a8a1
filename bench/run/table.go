package main

import (
	"fmt"
	"runtime"
	"sort"
	"strings"
	"time"
)

// row is one figure: sandfs against its anchor.
type row struct {
	figure string
	sandfs string // formatted median (or the figure itself when there is no anchor)
	anchor string
	ratio  string
	target string
	status string // met, short, or "—" when there is nothing to meet
	note   string
}

type table struct {
	rows         []row
	notes        []string
	failed       []string
	start        time.Time
	load0, load1 string
	quick        bool
	runs         int
}

// how a ratio is judged against its target.
const (
	atLeast = iota // throughput: sandfs/anchor ≥ target
	atMost         // time: sandfs/anchor ≤ target
)

// pair adds a row from the samples of sandfs and its anchor: the ratio
// is median(sandfs)/median(anchor), judged by cmp against want.
func (t *table) pair(figure, unit string, s, a []float64, cmp int, want float64, note string) float64 {
	ms, ma := median(s), median(a)
	r := row{figure: figure, sandfs: sampled(s, unit), anchor: sampled(a, unit), note: note}
	ratio := 0.0
	if ma > 0 && len(s) > 0 && len(a) > 0 {
		ratio = ms / ma
		r.ratio = fmt.Sprintf("%.2f", ratio)
	} else {
		r.ratio = "n/a"
	}
	switch {
	case want == 0:
		r.target, r.status = "—", "—"
	case cmp == atLeast:
		r.target = fmt.Sprintf("≥ %.2g", want)
		r.status = judge(r.ratio != "n/a" && ratio >= want)
	default:
		r.target = fmt.Sprintf("≤ %.2gx", want)
		r.status = judge(r.ratio != "n/a" && ratio <= want)
	}
	t.rows = append(t.rows, r)
	logf("%s: sandfs %s, anchor %s, ratio %s (%s)", figure, r.sandfs, r.anchor, r.ratio, r.status)
	return ratio
}

// single adds a row judged by ok against its target, not by a ratio;
// anchor is what its figure is set beside ("—": nothing).
func (t *table) single(figure, value, anchor, target string, ok bool, note string) {
	r := row{figure: figure, sandfs: value, anchor: anchor, ratio: "—", target: target, status: judge(ok), note: note}
	if target == "—" {
		r.status = "—"
	}
	t.rows = append(t.rows, r)
	logf("%s: %s (%s)", figure, value, r.status)
}

func judge(ok bool) string {
	if ok {
		return "met"
	}
	return "**short**"
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// sampled is the median of v, "0 unit" when it is zero (num's "n/a" is
// for no samples at all).
func sampled(v []float64, unit string) string {
	if len(v) > 0 && median(v) == 0 {
		return strings.TrimSpace("0 " + unit)
	}
	return num(median(v), unit)
}

func num(v float64, unit string) string {
	if v == 0 {
		return "n/a"
	}
	var s string
	switch {
	case v >= 10000:
		s = commas(int64(v + 0.5))
	case v >= 100:
		s = fmt.Sprintf("%.0f", v)
	case v >= 10:
		s = fmt.Sprintf("%.1f", v)
	default:
		s = fmt.Sprintf("%.3g", v)
	}
	return s + " " + unit
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (t *table) markdown() string {
	var b strings.Builder
	mode := "full"
	if t.quick {
		mode = "quick (`make bench QUICK=1`)"
	}
	fmt.Fprintf(&b, "# bench results\n\n")
	fmt.Fprintf(&b, "Written by `make bench` (bench/run) on %s, %s run, %v.\n", t.start.UTC().Format("2006-01-02 15:04 MST"), mode, time.Since(t.start).Round(time.Second))
	fmt.Fprintf(&b, "Machine: %d CPUs (nproc), kernel %s, load average %s at start, %s at end (the cores are shared with other sessions: read the ratios, not the absolute figures).\n\n", runtime.NumCPU(), kernel(), t.load0, t.load1)
	fmt.Fprintf(&b, "Each pair runs alternately, %d runs; the figures are medians and ratio = sandfs / anchor.\n\n", t.runs)
	b.WriteString("| figure | sandfs | anchor | ratio | target | status | note |\n|---|---|---|---|---|---|---|\n")
	for _, r := range t.rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.figure, r.sandfs, r.anchor, r.ratio, r.target, r.status, r.note)
	}
	if len(t.notes) > 0 {
		b.WriteString("\n")
		for _, n := range t.notes {
			fmt.Fprintf(&b, "- %s\n", n)
		}
	}
	if len(t.failed) > 0 {
		b.WriteString("\nGroups that failed to run:\n\n")
		for _, f := range t.failed {
			fmt.Fprintf(&b, "- %s\n", f)
		}
	}
	return b.String()
}
