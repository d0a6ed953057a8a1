package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"sandfs/core"
	"sandfs/core/changes"
	"sandfs/core/history"
	"sandfs/core/journal"
)

// The history rows: the journal's own cost, durable (core/history: the
// mmap'd tail, batched into SQLite) against in memory, measured in this
// process on the same events, taking turns; and what it keeps on disk.
// (The mount's create and unlink rows with and without it are in the fuse
// group.)

type appendFigures struct {
	perEvent []float64 // ns per Append, the whole run
	p50, p99 []float64 // ns, of every 64th
}

func runHistory(c *cfg, t *table) error {
	n := 200_000
	if c.quick {
		n = 50_000
	}
	events := make([]journal.Event, n)
	for i := range events {
		events[i] = journal.Event{Type: journal.Write, Path: fmt.Sprintf("/src/pkg%03d/file_%06d.go", i%500, i), Origin: journal.Mirror,
			Pid: uint32(1000 + i%50), Uid: 1000, Comm: "go", Cgroup: "/user.slice/user-1000.slice/session-3.scope",
			Size: int64(i), Mtime: time.Now(), Inode: uint64(100000 + i), Mode: 0o644}
	}
	dir, err := tmpfsDir(c, "history")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var mem, dur appendFigures
	var perHundredK []float64
	for i := 0; i < c.runs; i++ {
		logf("history run %d", i+1)
		for _, k := range order(2, i) {
			if k == 0 {
				appendRun(&mem, journal.New(), events)
				continue
			}
			d := filepath.Join(dir, fmt.Sprintf("run%d", i))
			l, err := history.Open(d, history.Retention{}, nil)
			if err != nil {
				return err
			}
			j, err := journal.NewWith(l)
			if err != nil {
				return err
			}
			appendRun(&dur, j, events)
			if err := l.Sync(); err != nil {
				return err
			}
			l.Close()
			perHundredK = append(perHundredK, float64(dirBytes(d, "journal.db", "journal.db-wal"))*100_000/float64(n))
			os.RemoveAll(d)
		}
	}
	note := fmt.Sprintf("%d events per run, appended from one goroutine; the durable journal's writer stores them in SQLite batches beside it (tmpfs state directory)", n)
	note += "; the target (≤ 1.2x) is the mount's: the fuse group's create and unlink rows, durable vs --no-history"
	t.pair("Journal append throughput, ns/event over a burst: durable (tail + SQLite batches) vs in memory", "ns", dur.perEvent, mem.perEvent, atMost, 0, note)
	t.pair("Journal append latency p50, ns: durable vs in memory", "ns", dur.p50, mem.p50, atMost, 0, "every 64th append timed: the cost on the appending request's path")
	t.pair("Journal append latency p99, ns: durable vs in memory", "ns", dur.p99, mem.p99, atMost, 0, "every 64th append timed")
	ms, err := changesSince(c, dir)
	if err != nil {
		return err
	}
	t.single("Changes since the oldest event over 100,000 kept events, ms (GET …/changes' core, read back from the durable journal after a restart)",
		fmt.Sprintf("%.1f ms", median(ms)), "—", "< 100 ms", median(ms) < 100,
		"100k events (writes, creates, renames, removes, chmods by three actors) over 2,000 files in 20 directories, rows checked against the tree")
	if err := runCheckpoints(c, t, dir); err != nil {
		return err
	}
	if err := runDiffs(c, t, dir); err != nil {
		return err
	}
	if err := forkRows(c, t, dir); err != nil {
		return err
	}
	t.single("Journal state on disk per 100,000 events (journal.db + WAL)", fmt.Sprintf("%.1f MiB", median(perHundredK)/(1<<20)), "—", "—", true,
		"events of ~60-byte paths with pid, comm and cgroup; the 32 MiB tail is a fixed, sparse file beside it")
	return nil
}

// changesSince times changes.Since over 100,000 events read back from the
// durable journal of a sandbox just reopened (the ring empty).
func changesSince(c *cfg, dir string) ([]float64, error) {
	root, state := filepath.Join(dir, "ch-root"), filepath.Join(dir, "ch-state")
	for d := 0; d < 20; d++ {
		if err := os.MkdirAll(filepath.Join(root, fmt.Sprintf("d%02d", d)), 0o755); err != nil {
			return nil, err
		}
	}
	for i := 0; i < 2000; i++ {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("d%02d/f%04d.go", i%20, i)), []byte("x\n"), 0o644); err != nil {
			return nil, err
		}
	}
	sb, err := core.Open("default", root, core.Options{StateDir: state})
	if err != nil {
		return nil, err
	}
	who := []journal.Event{{Origin: journal.API, Actor: "agent-1"}, {Origin: journal.Mirror, Pid: 7, Comm: "vim"}, {Origin: journal.External}}
	for i := 0; i < 100_000; i++ {
		e := who[i%3]
		e.Path = fmt.Sprintf("/d%02d/f%04d.go", i%20, i%2000)
		switch i % 50 {
		case 0:
			e.Type, e.Path = journal.Create, e.Path+".new"
		case 1:
			e.Type, e.OldPath, e.Path = journal.Rename, e.Path+".new", e.Path+".moved"
		case 2:
			e.Type, e.Path = journal.Remove, e.Path+".moved"
		case 3:
			e.Type = journal.Chmod
		default:
			e.Type = journal.Write
		}
		sb.Journal().Append(e)
	}
	sb.Close()
	if sb, err = core.Open("default", root, core.Options{StateDir: state}); err != nil {
		return nil, err
	}
	defer sb.Close()
	var ms []float64
	for i := 0; i < 5; i++ {
		t0 := time.Now()
		cs, err := changes.Since(context.Background(), sb, changes.Query{})
		if err != nil {
			return nil, err
		}
		if len(cs.Rows) < 1000 {
			return nil, fmt.Errorf("changes: %d rows, want about 2,000", len(cs.Rows))
		}
		ms = append(ms, float64(time.Since(t0).Microseconds())/1000)
	}
	return ms, nil
}

// appendRun appends events to j, timing the whole and every 64th one.
func appendRun(f *appendFigures, j *journal.Journal, events []journal.Event) {
	var lat []float64
	t0 := time.Now()
	for i, e := range events {
		if i%64 == 0 {
			t := time.Now()
			j.Append(e)
			lat = append(lat, float64(time.Since(t).Nanoseconds()))
			continue
		}
		j.Append(e)
	}
	f.perEvent = append(f.perEvent, float64(time.Since(t0).Nanoseconds())/float64(len(events)))
	sort.Float64s(lat)
	f.p50 = append(f.p50, lat[len(lat)/2])
	f.p99 = append(f.p99, lat[len(lat)*99/100])
}

// dirBytes is the sum of the sizes of names in dir.
func dirBytes(dir string, names ...string) int64 {
	var n int64
	for _, name := range names {
		if fi, err := os.Stat(filepath.Join(dir, name)); err == nil {
			n += fi.Size()
		}
	}
	return n
}
