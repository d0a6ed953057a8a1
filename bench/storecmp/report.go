package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

// report prints the medians over the rounds as markdown tables.
func report(w io.Writer, places [][2]string, res map[key][]result) {
	for _, pl := range places {
		p := pl[0]
		fmt.Fprintf(w, "\n### %s (%s)\n\n", p, pl[1])
		fmt.Fprint(w, "Append, events/s (median of rounds):\n\n")
		fmt.Fprintln(w, "| store | no sync, batch 1 | 64 | 1024 | fsync per batch, batch 1 | 64 | 1024 |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
		for _, st := range stores {
			fmt.Fprintf(w, "| %s ", st.name)
			for _, d := range []bool{false, true} {
				for _, bs := range []int{1, 64, 1024} {
					rs := res[key{p, st.name, d, bs}]
					if len(rs) == 0 {
						fmt.Fprint(w, "| – ")
						continue
					}
					fmt.Fprintf(w, "| %s ", thousands(med(rs, func(r result) float64 { return r.evps })))
				}
			}
			fmt.Fprintln(w, "|")
		}
		fmt.Fprint(w, "\nOne commit of a batch of 64, p50 / p99:\n\n")
		fmt.Fprintln(w, "| store | no sync | fsync per batch |")
		fmt.Fprintln(w, "|---|---:|---:|")
		for _, st := range stores {
			fmt.Fprintf(w, "| %s ", st.name)
			for _, d := range []bool{false, true} {
				rs := res[key{p, st.name, d, 64}]
				if len(rs) == 0 {
					fmt.Fprint(w, "| – ")
					continue
				}
				fmt.Fprintf(w, "| %s / %s ", dur(med(rs, func(r result) float64 { return float64(r.p50) })),
					dur(med(rs, func(r result) float64 { return float64(r.p99) })))
			}
			fmt.Fprintln(w, "|")
		}
		fmt.Fprint(w, "\nReads and pruning, on the store of the no-sync batch-1024 run (N events):\n\n")
		fmt.Fprintln(w, "| store | Scan of the newer half, decoded | SeqAtTime (median of 1000) | PruneBefore the older half | bytes per 100,000 events |")
		fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
		for _, st := range stores {
			rs := res[key{p, st.name, false, 1024}]
			if len(rs) == 0 || !rs[0].read {
				continue
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %.1f MB |\n", st.name,
				dur(med(rs, func(r result) float64 { return float64(r.scan) })),
				dur(med(rs, func(r result) float64 { return float64(r.seek) })),
				dur(med(rs, func(r result) float64 { return float64(r.prune) })),
				med(rs, func(r result) float64 { return float64(r.bytesPer100k) })/1e6)
		}
	}
}

func med(rs []result, f func(result) float64) float64 {
	v := make([]float64, len(rs))
	for i, r := range rs {
		v[i] = f(r)
	}
	slices.Sort(v)
	return v[len(v)/2]
}

func dur(ns float64) string {
	d := time.Duration(ns)
	switch {
	case d < time.Millisecond:
		return fmt.Sprintf("%.1f µs", ns/1e3)
	case d < time.Second:
		return fmt.Sprintf("%.1f ms", ns/1e6)
	}
	return fmt.Sprintf("%.2f s", ns/1e9)
}

func thousands(v float64) string {
	n := int64(v + 0.5)
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
