package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sandfs/core"
	"sandfs/core/checkpoint"
)

// mergeRows times a merge of a fork that changed 100 files into the
// 100,000-file parent (target: under 200 ms), and checks that a merge
// meeting 10 conflicts reports exactly those 10. The fork is a second
// sandbox, watched, whose tree is a copy of the parent's at a checkpoint:
// what a merge reads of a fork is its journal and its tree, whatever its
// root is made of. Each round the fork writes the same 100 files anew and
// the parent is restored to the base at those paths before it, so every
// merge takes 100 one-sided changes.
func mergeRows(c *cfg, t *table, sb *core.Sandbox, root, dir string) error {
	ctx := context.Background()
	base, err := checkpoint.Create(ctx, sb, checkpoint.Options{Name: "merge base"})
	if err != nil {
		return err
	}
	froot := filepath.Join(dir, "merge-fork")
	os.RemoveAll(froot)
	if out, err := exec.Command("cp", "-a", root, froot).CombinedOutput(); err != nil {
		return fmt.Errorf("cp -a: %v: %s", err, out)
	}
	defer os.RemoveAll(froot)
	fork, err := core.Open("fork", froot, core.Options{StateDir: filepath.Join(dir, "merge-fork-state")})
	if err != nil {
		return err
	}
	defer fork.Close()
	defer os.RemoveAll(filepath.Join(dir, "merge-fork-state"))
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := fork.StartWatching(wctx, nil); err != nil {
		return err
	}
	<-fork.Watch().Ready()
	<-fork.Reconciled()
	var paths []string
	for j := 0; j < 100; j++ {
		paths = append(paths, fmt.Sprintf("/d%02d/f%06d", j, 50_000+j*100+j%100))
	}
	write := func(s *core.Sandbox, ps []string, what string) error {
		for _, p := range ps {
			if _, err := s.WriteFile(ctx, p, strings.NewReader(what+" "+p), core.WriteOptions{}); err != nil {
				return err
			}
		}
		return nil
	}
	rounds := 3 * c.runs
	var ms []float64
	for r := 0; r < rounds; r++ {
		if _, err := checkpoint.Restore(ctx, sb, checkpoint.RestoreOptions{Checkpoint: base.ID, Paths: paths}); err != nil {
			return err
		}
		if err := write(fork, paths, fmt.Sprint("fork round ", r)); err != nil {
			return err
		}
		t0 := time.Now()
		res, err := checkpoint.Merge(ctx, sb, checkpoint.MergeOptions{Checkpoint: base.ID, Fork: fork, Name: "bench"})
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
		if err != nil {
			return err
		}
		if len(res.Written) != 100 || len(res.Conflicts) != 0 {
			return fmt.Errorf("merge wrote %d of 100, %d conflicts, skipped %v", len(res.Written), len(res.Conflicts), res.Skipped)
		}
	}
	t.single("Merge of a fork that changed 100 files into a 100,000-file parent, ms (median / worst)",
		fmt.Sprintf("%.1f / %.1f ms", median(ms), maxOf(ms)), "—", "< 200 ms", median(ms) < 200,
		fmt.Sprintf("%d rounds; tmpfs, both kernel watches on; each merge takes the parent's checkpoint first (the undo), reads the 100 files the fork's journal names, writes them as a restore does", rounds))

	// Ten of the hundred changed differently on the parent's side.
	if _, err := checkpoint.Restore(ctx, sb, checkpoint.RestoreOptions{Checkpoint: base.ID, Paths: paths}); err != nil {
		return err
	}
	if err := write(fork, paths, "fork, last"); err != nil {
		return err
	}
	if err := write(sb, paths[:10], "parent, last"); err != nil {
		return err
	}
	res, err := checkpoint.Merge(ctx, sb, checkpoint.MergeOptions{Checkpoint: base.ID, Fork: fork, Name: "bench"})
	exact := errors.Is(err, checkpoint.ErrConflicts) && len(res.Conflicts) == 10 && len(res.Written) == 0
	for i, cf := range res.Conflicts {
		exact = exact && i < 10 && cf.Path == paths[i] && cf.Diff != ""
	}
	t.single("A merge meeting 10 conflicts (strategy fail) reports exactly those 10", fmt.Sprintf("%d reported, %d written", len(res.Conflicts), len(res.Written)),
		"—", "exactly the 10", exact, "the parent wrote 10 of the fork's 100 changed files differently; fail merges nothing")
	return nil
}
