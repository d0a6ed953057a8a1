package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// fioMountRows: the same file operations through MNTDIR/default and
// MNTDIR/fork, run here (the daemon serving the mounts is another
// process): open, read 4 KiB and close of files the fork never wrote and
// of files it wrote, and create, write 4 KiB and close of new files in the
// tree's directories (removed after each round, untimed). The files read
// are read once through both mounts before the rounds, so the rows are of
// warm lookups. Rounds put the two kinds in the order of a Williams
// design, figure by figure.
func fioMountRows(c *cfg, t *table, p *proc, mnt string) error {
	nRead, nCreate, rounds := 2000, 1000, 4*c.runs
	if c.quick {
		nRead, nCreate = 500, 250
	}
	figs := []struct {
		name string
		lo   int // files read from lo on; -1: creates
	}{
		{"open, read 4 KiB, close of files the fork never wrote (its overlay's lower)", 0},
		{"open, read 4 KiB, close of files the fork wrote (its overlay's upper)", fioLower},
		{"create, write 4 KiB, close of new files in the tree's directories", -1},
	}
	count := func(f int) int {
		if figs[f].lo < 0 {
			return nCreate
		}
		return min(nRead, fioUpper-figs[f].lo)
	}
	for _, n := range fioNames {
		for f, fig := range figs[:2] {
			if _, err := fioReads(filepath.Join(mnt, n), fig.lo, count(f)); err != nil {
				return fmt.Errorf("%s: %w", n, err)
			}
		}
	}
	us := make([][2][]float64, len(figs))
	ticks, ops := make([][2]float64, len(figs)), make([][2]float64, len(figs))
	for r := 0; r < rounds; r++ {
		if r%c.runs == 0 {
			logf("forkio mount round %d of %d", r+1, rounds)
		}
		for f, fig := range figs {
			for _, k := range order(2, r+f) {
				d := filepath.Join(mnt, fioNames[k])
				c0 := cpuTicks(p.pid())
				var v float64
				var err error
				var made []string
				if fig.lo < 0 {
					v, made, err = fioCreates(d, r, count(f))
				} else {
					v, err = fioReads(d, fig.lo, count(f))
				}
				ticks[f][k] += cpuTicks(p.pid()) - c0
				for _, m := range made {
					os.Remove(m)
				}
				if err != nil {
					return fmt.Errorf("%s: %w", fioNames[k], err)
				}
				ops[f][k] += float64(count(f))
				us[f][k] = append(us[f][k], v)
			}
		}
	}
	for f, fig := range figs {
		note := fmt.Sprintf("the daemon and fork of the first forkio row; MNTDIR/fork vs MNTDIR/default, the mounts' defaults; %d rounds of %d files, in this process; daemon CPU per op: fork %.1f µs, plain %.1f µs",
			rounds, count(f), ticks[f][1]*1e4/ops[f][1], ticks[f][0]*1e4/ops[f][0])
		t.pair("FUSE "+fig.name+", µs/op: a fork vs the plain sandbox it was made from, on one daemon", "µs",
			us[f][1], us[f][0], atMost, 1.2, note)
	}
	return nil
}

// fioReads opens, reads and closes files [lo, lo+n) of the tree under
// dir, and gives µs per file.
func fioReads(dir string, lo, n int) (float64, error) {
	paths := make([]string, n)
	for i := range paths {
		paths[i] = dir + fioPath(lo+i)
	}
	return openReadEach(paths)
}

// fioCreates creates n new files of 4 KiB spread over the tree's
// directories under dir, writing and closing each, and gives µs per file
// and the files made (the caller removes them).
func fioCreates(dir string, round, n int) (float64, []string, error) {
	buf := fioBody(round)
	paths := make([]string, n)
	for i := range paths {
		paths[i] = filepath.Join(dir, fmt.Sprintf("d%02d/new%03d-%05d", i%fioDirs, round, i))
	}
	t := time.Now()
	for j, p := range paths {
		fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_EXCL|syscall.O_WRONLY|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			return 0, paths[:j], err
		}
		k, err := syscall.Write(fd, buf)
		if err == nil {
			err = syscall.Close(fd)
		} else {
			syscall.Close(fd)
		}
		if err != nil || k != len(buf) {
			return 0, paths[:j+1], fmt.Errorf("write %s: %d bytes, %v", p, k, err)
		}
	}
	return float64(time.Since(t).Nanoseconds()) / 1e3 / float64(n), paths, nil
}
