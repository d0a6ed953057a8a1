package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sandfs/core/linediff"
)

// The diff rows (in the history group): what a row's diff of changes
// since costs in core's line matcher, against diff -u on the same two
// files, taking turns. Targets: two 1 MiB texts with 10,000 scattered
// changes under 200 ms; each of 12,000 lines followed by a new one (the
// old matcher's quadratic case) under 100 ms.
func runDiffs(c *cfg, t *table, dir string) error {
	rng := rand.New(rand.NewPCG(3, 4))
	var a, b []string
	for i := 0; i < 30000; i++ {
		a = append(a, fmt.Sprintf("line %d of the file, with some words %d\n", i, rng.IntN(1000)))
	}
	b = append([]string(nil), a...)
	for e := 0; e < 10000; e++ {
		b[rng.IntN(len(b))] = fmt.Sprintf("changed %d\n", e)
	}
	if err := diffRow(c, t, dir, "Diff of two 1 MiB texts with 10,000 scattered changes, ms", a, b, 200); err != nil {
		return err
	}
	var wa, wb []string
	for i := 0; i < 12000; i++ {
		wa = append(wa, fmt.Sprintf("line %d\n", i))
		wb = append(wb, fmt.Sprintf("line %d\n", i), fmt.Sprintf("new %d\n", i))
	}
	return diffRow(c, t, dir, "Diff of 12,000 lines each followed by a new one, ms", wa, wb, 100)
}

func diffRow(c *cfg, t *table, dir, figure string, a, b []string, targetMS float64) error {
	pa, pb := filepath.Join(dir, "diff-a"), filepath.Join(dir, "diff-b")
	if err := os.WriteFile(pa, []byte(strings.Join(a, "")), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(pb, []byte(strings.Join(b, "")), 0o644); err != nil {
		return err
	}
	var ours, anchor []float64
	for r := 0; r < c.runs; r++ {
		t0 := time.Now()
		ops, err := linediff.Ops(context.Background(), a, b)
		if err != nil {
			return err
		}
		linediff.Group(ops, 3)
		ours = append(ours, float64(time.Since(t0).Microseconds())/1000)
		t0 = time.Now()
		exec.Command("diff", "-u", pa, pb).Run() // exit 1: they differ
		anchor = append(anchor, float64(time.Since(t0).Microseconds())/1000)
	}
	t.pair(figure, "ms", ours, anchor, atMost, 0,
		fmt.Sprintf("core/linediff (matching and hunks, no formatting) against diff -u (with its process start); target under %.0f ms: %s", targetMS, judge(median(ours) < targetMS)))
	os.Remove(pa)
	os.Remove(pb)
	return nil
}
