package main

import (
	"os"
	"testing"
)

// BenchmarkScan reads 100,000 events back from each store on tmpfs, with
// SQLite also under a larger page cache and with mmap, to see what the
// scan of "changes since" costs and where SQLite's time goes.
func BenchmarkScan(b *testing.B) {
	recs := makeRecs(100_000)
	for _, op := range stores {
		if op.relaxedOnly {
			continue
		}
		b.Run(op.name, func(b *testing.B) { benchScan(b, op, recs, nil) })
	}
	for _, pragma := range []string{"PRAGMA cache_size=-65536", "PRAGMA mmap_size=268435456"} {
		for _, op := range stores[:2] {
			b.Run(op.name+"/"+pragma, func(b *testing.B) { benchScan(b, op, recs, []string{pragma}) })
		}
	}
}

func benchScan(b *testing.B, op opener, recs []rec, pragmas []string) {
	dir, err := os.MkdirTemp("/dev/shm", "storecmp-")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	s, err := op.open(dir, false)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, p := range pragmas {
		if _, err := s.(*sqliteStore).db.Exec(p); err != nil {
			b.Fatal(err)
		}
	}
	for i := 0; i < len(recs); i += 1024 {
		if err := s.Append(recs[i:min(i+1024, len(recs))]); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for range b.N {
		n := 0
		if err := s.Scan(1, func(*rec) error { n++; return nil }); err != nil || n != len(recs) {
			b.Fatal(n, err)
		}
	}
}

// BenchmarkPruneBolt deletes the older half of 200,000 events from bbolt.
func BenchmarkPruneBolt(b *testing.B) {
	recs := makeRecs(200_000)
	for range b.N {
		b.StopTimer()
		dir, err := os.MkdirTemp("/dev/shm", "storecmp-")
		if err != nil {
			b.Fatal(err)
		}
		s, err := openBolt(dir, false)
		if err != nil {
			b.Fatal(err)
		}
		for i := 0; i < len(recs); i += 1024 {
			if err := s.Append(recs[i:min(i+1024, len(recs))]); err != nil {
				b.Fatal(err)
			}
		}
		b.StartTimer()
		if err := s.PruneBefore(100_001); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if got, _ := s.SeqAtTime(0); got != 100_001 {
			b.Fatal("first seq after prune", got)
		}
		s.Close()
		os.RemoveAll(dir)
	}
}

// BenchmarkSQLiteGroupBy is "changes since" done by SQLite itself: one row
// per path over the newer 100,000 of 200,000 events, instead of every event.
func BenchmarkSQLiteGroupBy(b *testing.B) {
	recs := makeRecs(200_000)
	dir := b.TempDir()
	s, err := openSQLite(dir, "OFF", false)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for i := 0; i < len(recs); i += 1024 {
		if err := s.Append(recs[i:min(i+1024, len(recs))]); err != nil {
			b.Fatal(err)
		}
	}
	db := s.(*sqliteStore).db
	b.ResetTimer()
	for range b.N {
		rows, err := db.Query(`SELECT path, min(seq), max(seq), min(time), max(time), count(*),
			group_concat(DISTINCT actor) FROM ev WHERE seq >= ? GROUP BY path`, 100_001)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for rows.Next() {
			n++
		}
		rows.Close()
		if n != 5000 {
			b.Fatal("paths", n)
		}
	}
}
