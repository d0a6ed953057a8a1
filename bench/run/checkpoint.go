package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"sandfs/core"
	"sandfs/core/checkpoint"
)

// The checkpoint rows (in the history group): what POST …/checkpoints and
// POST …/restore cost in core, on a tmpfs root with the kernel watch
// running, as the daemon has it. Targets: a checkpoint after
// 100 changed files in a 100,000-file tree under 100 ms, a restore of 100
// files under 200 ms, the first materialization of a checkpoint no slower
// than cp -al; and what a first checkpoint of 1 GiB costs.

func runCheckpoints(c *cfg, t *table, dir string) error {
	ctx := context.Background()
	root, state := filepath.Join(dir, "cp-root"), filepath.Join(dir, "cp-state")
	t0 := time.Now()
	for i := 0; i < 100_000; i++ {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%06d", i))
		if i < 100 {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			return err
		}
	}
	sb, err := core.Open("default", root, core.Options{StateDir: state})
	if err != nil {
		return err
	}
	defer sb.Close()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := sb.StartWatching(wctx, nil); err != nil {
		return err
	}
	<-sb.Watch().Ready()
	<-sb.Reconciled()
	logf("checkpoint: 100,000 files made and watched in %v", time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	base, err := checkpoint.Create(ctx, sb, checkpoint.Options{Name: "base"})
	if err != nil {
		return err
	}
	first := time.Since(t0)
	rounds := 3 * c.runs
	var cpMS, restoreMS []float64
	for r := 0; r < rounds; r++ {
		var paths []string
		for j := 0; j < 100; j++ {
			p := fmt.Sprintf("/d%02d/f%06d", j, (r*7919+j*997)%1000*100+j)
			if _, err := sb.WriteFile(ctx, p, strings.NewReader(fmt.Sprint("round ", r, " file ", j)), core.WriteOptions{}); err != nil {
				return err
			}
			paths = append(paths, p)
		}
		t1 := time.Now()
		if _, err := checkpoint.Create(ctx, sb, checkpoint.Options{}); err != nil {
			return err
		}
		cpMS = append(cpMS, float64(time.Since(t1).Microseconds())/1000)
		t1 = time.Now()
		res, err := checkpoint.Restore(ctx, sb, checkpoint.RestoreOptions{Checkpoint: base.ID, Paths: paths})
		if err != nil {
			return err
		}
		restoreMS = append(restoreMS, float64(time.Since(t1).Microseconds())/1000)
		if len(res.Written) != 100 {
			return fmt.Errorf("restore wrote %d of 100 (skipped %v)", len(res.Written), res.Skipped)
		}
	}
	t.single("Checkpoint after 100 changed files in a 100,000-file tree, ms (median / worst)",
		fmt.Sprintf("%.1f / %.1f ms", median(cpMS), maxOf(cpMS)), "—", "< 100 ms", median(cpMS) < 100,
		fmt.Sprintf("%d rounds; tmpfs root, kernel watch on: the journal names what changed; first checkpoint of the tree %v", rounds, first.Round(time.Millisecond)))
	t.single("Restore of 100 files from a checkpoint (by paths; the restore's own checkpoint first), ms (median / worst)",
		fmt.Sprintf("%.1f / %.1f ms", median(restoreMS), maxOf(restoreMS)), "—", "< 200 ms", median(restoreMS) < 200,
		fmt.Sprintf("%d rounds in the same 100,000-file tree; each restore takes a checkpoint first so it can be undone", rounds))
	// Merges before the materialization rows: their anchor, cp -al of the
	// root, changes every file's ctime (its link count) unseen by the
	// journal, and a merge then finds every file changed since the
	// checkpoint it took.
	if err := mergeRows(c, t, sb, root, dir); err != nil {
		return err
	}
	if err := materializeRows(c, t, sb, base.ID, root, dir); err != nil {
		return err
	}
	if err := firstGiB(c, t, dir); err != nil {
		return err
	}
	return sparseGiB(c, t, dir)
}

// firstGiB times the first checkpoint of 1 GiB (1,000 files of 1 MiB; 256
// with -quick), which reads, hashes and copies every byte.
func firstGiB(c *cfg, t *table, dir string) error {
	n := 1000
	if c.quick {
		n = 256
	}
	root, state := filepath.Join(dir, "gib-root"), filepath.Join(dir, "gib-state")
	buf := make([]byte, 1<<20)
	for i := 0; i < n; i++ {
		copy(buf, fmt.Sprintf("file %d ", i)) // distinct contents: nothing deduplicates
		for j := 64; j < len(buf); j += 4096 {
			buf[j] = byte(i + j)
		}
		p := filepath.Join(root, fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%04d", i))
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			return err
		}
	}
	sb, err := core.Open("default", root, core.Options{StateDir: state})
	if err != nil {
		return err
	}
	defer sb.Close()
	t0 := time.Now()
	cp, err := checkpoint.Create(context.Background(), sb, checkpoint.Options{})
	if err != nil {
		return err
	}
	el := time.Since(t0)
	t.single(fmt.Sprintf("First checkpoint of %d MiB (%d files of 1 MiB), s", n, n),
		fmt.Sprintf("%.2f s (%.0f MiB/s)", el.Seconds(), float64(n)/el.Seconds()), "—", "—", true,
		fmt.Sprintf("tmpfs: no FICLONE, so every byte is read, hashed (SHA-256) and copied into the store; %d new bytes", cp.NewBytes))
	os.RemoveAll(root)
	os.RemoveAll(state)
	return nil
}

// sparseGiB times the checkpoint of one sparse file of 1 GiB holding
// 10 KiB of data (what a tar's sparse entry or a VM image leaves), against
// cp --sparse=always of the same file into the same filesystem, taking
// turns; the state bytes written are the store's size on disk after it.
func sparseGiB(c *cfg, t *table, dir string) error {
	root := filepath.Join(dir, "sparse-root")
	os.MkdirAll(root, 0o755)
	src := filepath.Join(root, "image")
	f, err := os.Create(src)
	if err != nil {
		return err
	}
	f.Truncate(1 << 30)
	data := make([]byte, 10<<10)
	for i := range data {
		data[i] = byte(i*7 + 1)
	}
	f.WriteAt(data, 512<<20)
	f.Close()
	var cps, cpAnchor []float64
	var stored int64
	for r := 0; r < c.runs; r++ {
		state := filepath.Join(dir, "sparse-state")
		os.RemoveAll(state)
		sb, err := core.Open("default", root, core.Options{StateDir: state})
		if err != nil {
			return err
		}
		t0 := time.Now()
		_, err = checkpoint.Create(context.Background(), sb, checkpoint.Options{})
		el := time.Since(t0)
		stored, _, _ = checkpoint.StoreBytes(sb)
		sb.Close()
		if err != nil {
			return err
		}
		cps = append(cps, el.Seconds()*1000)
		dst := filepath.Join(dir, "sparse-copy")
		os.Remove(dst)
		t0 = time.Now()
		if out, err := exec.Command("cp", "--sparse=always", src, dst).CombinedOutput(); err != nil {
			return fmt.Errorf("cp: %v: %s", err, out)
		}
		cpAnchor = append(cpAnchor, time.Since(t0).Seconds()*1000)
		os.Remove(dst)
	}
	t.pair("Checkpoint of a sparse 1 GiB file holding 10 KiB, ms", "ms", cps, cpAnchor, atMost, 0,
		fmt.Sprintf("anchor: cp --sparse=always of the same file; the store took %d KiB on disk (holes kept; the hash still reads every byte's worth of zeros)", stored>>10))
	os.RemoveAll(root)
	os.RemoveAll(filepath.Join(dir, "sparse-state"))
	return nil
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// materializeRows times the first materialization of a checkpoint of the
// 100,000-file tree (its tree made whole for a fork's overlay) against
// `cp -al` of the root into the same filesystem, taking turns; each run
// removes the made tree first, so each is a first one.
func materializeRows(c *cfg, t *table, sb *core.Sandbox, id, root, dir string) error {
	made := filepath.Join(sb.StateDir(), "lower", id)
	links := filepath.Join(dir, "cp-al")
	var mat, cpal []float64
	for r := 0; r < c.runs; r++ {
		os.RemoveAll(made)
		t0 := time.Now()
		l, err := checkpoint.Materialize(context.Background(), sb, id)
		if err != nil {
			return err
		}
		if !l.Made || l.Path != made {
			return fmt.Errorf("materialize: %+v, want made at %s", l, made)
		}
		mat = append(mat, float64(time.Since(t0).Microseconds())/1000)
		ms, err := cpAL(root, links)
		if err != nil {
			return err
		}
		cpal = append(cpal, ms)
	}
	t.pair("First materialization of a checkpoint of a 100,000-file tree (the lower of a fork), ms: checkpoint.Materialize vs cp -al of the root", "ms",
		mat, cpal, atMost, 1.0, fmt.Sprintf("%d runs taking turns, each made tree removed first; tmpfs; the made tree copies no content (its files are the store's objects, hard-linked, where an object has the file's mode, owner and mtime, else overlay metacopy files)", c.runs))
	return linkedRows(c, t, sb, root, links)
}

// linkedRows times the materialization of a checkpoint taken after 100
// changed files, the tree of the one before made (what a fork of a live
// sandbox pays: it takes a checkpoint now), against cp -al of the root,
// taking turns: the build links what did not change.
func linkedRows(c *cfg, t *table, sb *core.Sandbox, root, links string) error {
	ctx := context.Background()
	var mat, cpal []float64
	for r := 0; r < c.runs; r++ {
		for j := 0; j < 100; j++ {
			p := fmt.Sprintf("/d%02d/f%06d", j, (r*6007+j*331)%1000*100+j)
			if _, err := sb.WriteFile(ctx, p, strings.NewReader(fmt.Sprint("linked round ", r, " file ", j)), core.WriteOptions{}); err != nil {
				return err
			}
		}
		cp, err := checkpoint.Create(ctx, sb, checkpoint.Options{})
		if err != nil {
			return err
		}
		t0 := time.Now()
		l, err := checkpoint.Materialize(ctx, sb, cp.ID)
		if err != nil {
			return err
		}
		if !l.Made {
			return fmt.Errorf("materialize %s: %+v, want made", cp.ID, l)
		}
		mat = append(mat, float64(time.Since(t0).Microseconds())/1000)
		ms, err := cpAL(root, links)
		if err != nil {
			return err
		}
		cpal = append(cpal, ms)
	}
	os.RemoveAll(links)
	t.pair("Materialization of a checkpoint taken after 100 changed files in a 100,000-file tree, the one before made (a fork of a live sandbox), ms: checkpoint.Materialize vs cp -al of the root", "ms",
		mat, cpal, atMost, 1.0, fmt.Sprintf("%d runs taking turns; tmpfs; unchanged entries are hard links to the tree made before, changed ones made anew", c.runs))
	return nil
}

// cpAL times `cp -al root links` (links removed first), in ms: the
// anchor of a made tree.
func cpAL(root, links string) (float64, error) {
	os.RemoveAll(links)
	t0 := time.Now()
	if out, err := exec.Command("cp", "-al", root, links).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("cp -al: %v: %s", err, out)
	}
	return float64(time.Since(t0).Microseconds()) / 1000, nil
}
