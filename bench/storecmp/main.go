// Command storecmp measures the embedded stores the durable journal could
// sit on (SQLite through modernc.org/sqlite, bbolt, Pebble) on the
// operations the journal does: batched appends, a scan of "changes since",
// a seek by time, pruning the oldest. It is its own module so that none of
// these stores enters sandfs's go.mod. See README.md for the results.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	quick := flag.Bool("quick", false, "a short run: 20,000 events, one round, tmpfs only")
	n := flag.Int("n", 200_000, "events appended per run")
	rounds := flag.Int("rounds", 3, "rounds (stores alternate within each)")
	dirs := flag.String("dirs", "tmpfs=/dev/shm,disk=/tmp", "where to run: label=dir,…")
	syncOne := flag.Int("sync1", 5_000, "events for the durable batch-of-1 runs (one fsync each)")
	only := flag.String("stores", "", "run only these stores: name,… (default all)")
	build := flag.Bool("build", false, "measure build size and cold-cache build times instead")
	flag.Parse()
	if *build {
		if err := measureBuild(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *quick {
		*n, *rounds, *dirs, *syncOne = 20_000, 1, "tmpfs=/dev/shm", 1_000
	}
	if *only != "" {
		names := strings.Split(*only, ",")
		stores = slices.DeleteFunc(stores, func(o opener) bool { return !slices.Contains(names, o.name) })
	}
	recs := makeRecs(*n)
	res := map[key][]result{}
	var places [][2]string
	for _, d := range strings.Split(*dirs, ",") {
		label, dir, _ := strings.Cut(d, "=")
		places = append(places, [2]string{label, dir})
	}
	for round := range *rounds {
		for _, pl := range places {
			for _, durable := range []bool{false, true} {
				for _, bs := range []int{1, 64, 1024} {
					for _, st := range stores {
						if st.relaxedOnly && durable {
							continue
						}
						cnt := *n
						if durable && bs == 1 {
							cnt = min(*n, *syncOne)
						}
						k := key{pl[0], st.name, durable, bs}
						r, err := runOne(pl[1], st, durable, bs, recs[:cnt], bs == 1024 && !durable)
						if err != nil {
							fmt.Fprintf(os.Stderr, "%v: %v\n", k, err)
							os.Exit(1)
						}
						fmt.Fprintf(os.Stderr, "round %d %s %s durable=%v batch=%d: %.0f ev/s\n",
							round+1, pl[0], st.name, durable, bs, r.evps)
						res[k] = append(res[k], r)
					}
				}
			}
		}
	}
	report(os.Stdout, places, res)
}

type key struct {
	place, store string
	durable      bool
	batch        int
}

// result is one run: appends, and for the read run the rest.
type result struct {
	evps              float64
	p50, p99          time.Duration // per batch commit
	scan, seek, prune time.Duration
	bytesPer100k      int64
	read              bool
}

func makeRecs(n int) []rec {
	base := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).UnixNano()
	origins := []string{"api", "fuse", "fuse", "external"}
	types := []string{"write", "write", "create", "remove", "rename", "mkdir"}
	comms := []string{"", "go", "vim", "node"}
	out := make([]rec, n)
	for i := range out {
		r := &out[i]
		r.Seq = uint64(i + 1)
		r.Time = base + int64(i)*20_000 + int64(i%7)*1000 // 50,000 events/s
		r.Origin, r.Type = origins[i%len(origins)], types[i%len(types)]
		r.Path = fmt.Sprintf("/src/pkg/file_%06d.go", i%5000)
		if r.Type == "rename" {
			r.OldPath = fmt.Sprintf("/src/pkg/file_%06d.go.tmp", i%5000)
		}
		if i%4 == 0 {
			r.Actor = "agent-1"
		}
		if r.Origin == "fuse" {
			r.Pid, r.Uid, r.Comm = uint32(1000+i%300), 1000, comms[i%len(comms)]
		}
		r.Size, r.Mtime, r.Inode = int64(i%65536), r.Time-int64(i%1000), uint64(100000+i%5000)
	}
	return out
}

// runOne appends recs in batches of bs to a fresh store under parent; when
// read is set it then measures bytes on disk, Scan, SeqAtTime and Prune.
func runOne(parent string, op opener, durable bool, bs int, recs []rec, read bool) (res result, err error) {
	dir, err := os.MkdirTemp(parent, "storecmp-")
	if err != nil {
		return res, err
	}
	defer os.RemoveAll(dir)
	s, err := op.open(dir, durable)
	if err != nil {
		return res, err
	}
	defer func() {
		if cerr := s.Close(); err == nil {
			err = cerr
		}
	}()
	lat := make([]time.Duration, 0, len(recs)/bs+1)
	start := time.Now()
	for i := 0; i < len(recs); i += bs {
		t := time.Now()
		if err := s.Append(recs[i:min(i+bs, len(recs))]); err != nil {
			return res, err
		}
		lat = append(lat, time.Since(t))
	}
	res.evps = float64(len(recs)) / time.Since(start).Seconds()
	slices.Sort(lat)
	res.p50, res.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	if !read {
		return res, nil
	}
	return measureRead(s, dir, recs, res)
}

func measureRead(s store, dir string, recs []rec, res result) (result, error) {
	res.read = true
	if err := s.Compact(); err != nil {
		return res, err
	}
	sz, err := dirSize(dir)
	if err != nil {
		return res, err
	}
	res.bytesPer100k = sz * 100_000 / int64(len(recs))
	half := uint64(len(recs)/2 + 1)
	t := time.Now()
	var cnt int
	var sum int64
	err = s.Scan(half, func(r *rec) error { cnt++; sum += r.Size + int64(len(r.Path)); return nil })
	res.scan = time.Since(t)
	if err != nil {
		return res, err
	}
	if cnt != len(recs)-int(half)+1 {
		return res, fmt.Errorf("scan: %d records, want %d", cnt, len(recs)-int(half)+1)
	}
	const seeks = 1000
	ds := make([]time.Duration, seeks)
	for i := range ds {
		want := recs[(i*7919)%len(recs)]
		t := time.Now()
		got, err := s.SeqAtTime(want.Time)
		ds[i] = time.Since(t)
		if err != nil {
			return res, err
		}
		if got != want.Seq {
			return res, fmt.Errorf("SeqAtTime(%d) = %d, want %d", want.Time, got, want.Seq)
		}
	}
	slices.Sort(ds)
	res.seek = ds[seeks/2]
	t = time.Now()
	if err := s.PruneBefore(half); err != nil {
		return res, err
	}
	res.prune = time.Since(t)
	if got, err := s.SeqAtTime(recs[0].Time); err != nil || got != half {
		return res, fmt.Errorf("after prune: first seq %d (%v), want %d", got, err, half)
	}
	return res, nil
}

// dirsUnder is used by the build measure to find the hello programs.
func dirsUnder(root string) ([]string, error) {
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	return out, nil
}
