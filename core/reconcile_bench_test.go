package core

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkStartComparison times a start on a 100,000-file tree with a
// kept journal: the kernel watch's first walk (ready) and the comparison
// of the tree with the journal's manifest (reconciled), what a daemon
// start and a take-up pay before a checkpoint may trust the journal.
func BenchmarkStartComparison(b *testing.B) {
	base := b.TempDir()
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		d, err := os.MkdirTemp("/dev/shm", "sandfs-bench-")
		if err == nil {
			base = d
			defer os.RemoveAll(d)
		}
	}
	root, state := filepath.Join(base, "root"), filepath.Join(base, "state")
	for i := range 100_000 {
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%06d", i))
		if i < 100 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(fmt.Sprintf("file %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	start := func() (ready, reconciled time.Duration) {
		t0 := time.Now()
		s, err := Open("default", root, Options{StateDir: state})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if err := s.StartWatching(ctx, nil); err != nil {
			b.Fatal(err)
		}
		<-s.Watch().Ready()
		ready = time.Since(t0)
		<-s.Reconciled()
		return ready, time.Since(t0)
	}
	start() // the journal's first manifest
	b.ResetTimer()
	var ready, rec time.Duration
	for range b.N {
		r, c := start()
		ready += r
		rec += c
	}
	b.ReportMetric(float64(ready.Milliseconds())/float64(b.N), "ms-ready")
	b.ReportMetric(float64(rec.Milliseconds())/float64(b.N), "ms-reconciled")
}
