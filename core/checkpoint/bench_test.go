package checkpoint

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandfs/core"
)

// The checkpoint benchmarks. The trees are big: they are made
// once per run, outside the timer. SANDFS_BENCH_DIR puts them elsewhere
// than the test's temp dir (say /dev/shm for tmpfs).

func benchDir(b *testing.B) string {
	if d := os.Getenv("SANDFS_BENCH_DIR"); d != "" {
		dir, err := os.MkdirTemp(d, "cpbench")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(dir) })
		return dir
	}
	return b.TempDir()
}

func benchSandbox(b *testing.B, dir string, watch bool) *core.Sandbox {
	root, state := filepath.Join(dir, "root"), filepath.Join(dir, "state")
	os.MkdirAll(root, 0o755)
	os.MkdirAll(state, 0o700)
	s, err := core.Open("default", root, core.Options{StateDir: state})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	if watch {
		wctx, cancel := context.WithCancel(context.Background())
		b.Cleanup(cancel)
		if err := s.StartWatching(wctx, nil); err != nil {
			b.Skip("no kernel watch:", err)
		}
		<-s.Watch().Ready()
		<-s.Reconciled()
	}
	return s
}

// fillTree makes n files of size bytes (random content) in 100 directories.
func fillTree(b *testing.B, root string, n, size int) {
	buf := make([]byte, size)
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < n; i++ {
		for j := 0; j+8 <= len(buf); j += 8 {
			v := r.Uint64()
			buf[j], buf[j+1], buf[j+2], buf[j+3], buf[j+4], buf[j+5], buf[j+6], buf[j+7] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24), byte(v>>32), byte(v>>40), byte(v>>48), byte(v>>56)
		}
		if len(buf) < 8 {
			copy(buf, fmt.Sprint(i))
		}
		p := filepath.Join(root, fmt.Sprintf("d%02d", i%100), fmt.Sprintf("f%06d", i))
		if i < 100 {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointFirst: the first checkpoint of 1,000 files of 1 MiB
// (SANDFS_BENCH_SMALL=1: of 64).
func BenchmarkCheckpointFirst(b *testing.B) {
	n := 1000
	if os.Getenv("SANDFS_BENCH_SMALL") != "" {
		n = 64
	}
	dir := benchDir(b)
	root := filepath.Join(dir, "root")
	os.MkdirAll(root, 0o755)
	fillTree(b, root, n, 1<<20)
	b.SetBytes(int64(n) << 20)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		state := filepath.Join(dir, fmt.Sprint("state", i))
		os.MkdirAll(state, 0o700)
		s, err := core.Open("default", root, core.Options{StateDir: state})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		cp, err := Create(context.Background(), s, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if cp.NewBytes != int64(n)<<20 {
			b.Errorf("new bytes %d", cp.NewBytes)
		}
		s.Close()
		os.RemoveAll(state)
		b.StartTimer()
	}
}

// big100k is a 100,000-file tree with one checkpoint taken and the kernel
// watch running.
func big100k(b *testing.B) (*core.Sandbox, Checkpoint) {
	dir := benchDir(b)
	s := benchSandbox(b, dir, true)
	t0 := time.Now()
	fillTree(b, s.HostRoot(), 100_000, 64)
	time.Sleep(100 * time.Millisecond) // the watch's creates
	made := time.Since(t0)
	t0 = time.Now()
	cp, err := Create(context.Background(), s, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("100,000 files made in %v; first checkpoint %v (%d new bytes)", made, time.Since(t0), cp.NewBytes)
	return s, cp
}

func change100(b *testing.B, s *core.Sandbox, round int) {
	for j := 0; j < 100; j++ {
		p := fmt.Sprintf("/d%02d/f%06d", j, j*997%100_000/100*100+j)
		if _, err := s.WriteFile(context.Background(), p, strings.NewReader(fmt.Sprint("round ", round, " file ", j)), core.WriteOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCheckpointAfter100Changes: a checkpoint after 100 files changed
// in a 100,000-file tree (the journal names them).
func BenchmarkCheckpointAfter100Changes(b *testing.B) {
	s, _ := big100k(b)
	b.ResetTimer()
	var worst time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		change100(b, s, i)
		b.StartTimer()
		t0 := time.Now()
		if _, err := Create(context.Background(), s, Options{}); err != nil {
			b.Fatal(err)
		}
		worst = max(worst, time.Since(t0))
	}
	b.ReportMetric(float64(worst.Microseconds())/1000, "worst-ms")
}

// BenchmarkRestore100Files: a whole-tree restore of a 100,000-file tree
// where 100 files changed since the checkpoint.
func BenchmarkRestore100Files(b *testing.B) {
	s, cp := big100k(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		change100(b, s, i)
		b.StartTimer()
		res, err := Restore(context.Background(), s, RestoreOptions{Checkpoint: cp.ID})
		if err != nil {
			b.Fatal(err)
		}
		if len(res.Written) != 100 {
			b.Fatalf("wrote %d, skipped %v", len(res.Written), res.Skipped)
		}
	}
}

// BenchmarkCheckpointWalk: a checkpoint of a 100,000-file tree no watch
// covered since the last one (a sandbox opened again on its root): every
// entry is looked at, none read.
func BenchmarkCheckpointWalk(b *testing.B) {
	dir := benchDir(b)
	s := benchSandbox(b, dir, false)
	fillTree(b, s.HostRoot(), 100_000, 64)
	if _, err := Create(context.Background(), s, Options{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cp, err := Create(context.Background(), s, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if cp.Files != 100_000 {
			b.Fatalf("%d files", cp.Files)
		}
	}
}
