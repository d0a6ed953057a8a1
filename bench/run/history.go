package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"sandfs/core/history"
	"sandfs/core/journal"
)

// The history rows: the journal's own cost, durable (core/history: the
// mmap'd tail, batched into SQLite) against in memory, measured in this
// process on the same events, taking turns; and what it keeps on disk.
// (The mount's create and unlink rows with and without it are in the fuse
// group.)

type appendFigures struct {
	perEvent []float64 // ns per Append
	p99      []float64 // ns
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
	t.pair("Journal append, ns/event: durable (tail + SQLite batches) vs in memory", "ns", dur.perEvent, mem.perEvent, atMost, 1.2, note)
	t.pair("Journal append p99, ns: durable vs in memory", "ns", dur.p99, mem.p99, atMost, 0, "every 64th append timed")
	t.single("Journal state on disk per 100,000 events (journal.db + WAL)", fmt.Sprintf("%.1f MiB", median(perHundredK)/(1<<20)), "—", "—", true,
		"events of ~60-byte paths with pid, comm and cgroup; the 32 MiB tail is a fixed, sparse file beside it")
	return nil
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
