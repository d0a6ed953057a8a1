package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// The FUSE rows: the same operations on the native root, on sandfs's
// mirror of it (serve --mount, defaults: passthrough, coherent cache 0) and
// on go-fuse's loopback example of it (its defaults: 1 s caches), each
// mounted in turn, run by run. Every operation runs here, in the harness.

type fsFigures struct {
	write, read, stat, create, unlink, readdir []float64
}

func runFUSE(c *cfg, t *table) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the FUSE rows need root")
	}
	if err := needLoopback(c); err != nil {
		return err
	}
	hroot, err := httpRoot(c)
	if err != nil {
		return err
	}
	root := filepath.Join(c.work, "fuse")
	os.MkdirAll(root, 0o755)
	big := filepath.Join(root, "big")
	if fi, err := os.Stat(big); err != nil || fi.Size() != c.bigMiB<<20 {
		os.Remove(big)
		if err := os.Link(filepath.Join(hroot, "big"), big); err != nil {
			return err
		}
	}
	os.WriteFile(filepath.Join(root, "stat1"), []byte("hello\n"), 0o644)
	if err := mkTree(filepath.Join(root, "rd"), 1, 5000); err != nil {
		return err
	}
	mnt := filepath.Join(c.work, "mnt")
	nCreate, nStat := 5000, 100_000
	if c.quick {
		nCreate, nStat = 300, 5_000
	}
	var nat, sfs, lb fsFigures
	var stale staleFigures
	for i := 0; i < c.runs; i++ {
		logf("fuse run %d", i+1)
		kinds := []int{0, 1, 2}
		if i%2 == 1 {
			kinds = []int{2, 1, 0}
		}
		for _, k := range kinds {
			switch k {
			case 0:
				if err := fsRun(&nat, root, nCreate, nStat, c.bigMiB); err != nil {
					return fmt.Errorf("native: %w", err)
				}
			case 1:
				p, err := startMount(c, root, mnt)
				if err != nil {
					return err
				}
				err = fsRun(&sfs, mnt, nCreate, nStat, c.bigMiB)
				if err == nil {
					err = staleWindow(&stale, root, mnt, 100)
				}
				p.stop()
				if err != nil {
					return fmt.Errorf("sandfs: %w", err)
				}
			case 2:
				p, err := startLoopback(c, root, mnt)
				if err != nil {
					return err
				}
				err = fsRun(&lb, mnt, nCreate, nStat, c.bigMiB)
				p.stop()
				if err != nil {
					return fmt.Errorf("loopback: %w", err)
				}
			}
		}
	}
	vs := func(a, b []float64) string {
		if median(b) == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.2f", median(a)/median(b))
	}
	t.single("FUSE staleness: outside append to the root → size seen through the mount (default cache), p50 / p99",
		fmt.Sprintf("%.0f / %.0f µs", pct(stale.lat, 50), pct(stale.lat, 99)), "—", "—", true,
		fmt.Sprintf("%d appends; the first stat after the append saw the old size %d times (the kernel watch's delivery; --mount-cache 0 asks every time)", len(stale.lat), stale.staleFirst))
	t.pair(fmt.Sprintf("FUSE sequential read %d MiB warm, 1 MiB blocks, MiB/s: sandfs mirror vs native", c.bigMiB), "MiB/s", sfs.read, nat.read, atLeast, 0.9,
		"passthrough; loopback/native "+vs(lb.read, nat.read))
	t.pair(fmt.Sprintf("FUSE sequential write %d MiB + fsync, 1 MiB blocks, MiB/s: sandfs mirror vs native", c.bigMiB), "MiB/s", sfs.write, nat.write, atLeast, 0.75,
		"loopback/native "+vs(lb.write, nat.write))
	t.pair("FUSE warm lstat, ns/op: sandfs mirror (default --mount-cache 1m, invalidated from the journal) vs native", "ns", sfs.stat, nat.stat, atMost, 1.5,
		fmt.Sprintf("go-fuse loopback (1 s cache, stale): %s ns = %sx native", num(median(lb.stat), ""), vs(lb.stat, nat.stat)))
	t.pair(fmt.Sprintf("FUSE create %d files, s: sandfs mirror vs go-fuse loopback", nCreate), "s", sfs.create, lb.create, atMost, 1.0, "sandfs/native "+vs(sfs.create, nat.create))
	t.pair(fmt.Sprintf("FUSE unlink %d files, s: sandfs mirror vs go-fuse loopback", nCreate), "s", sfs.unlink, lb.unlink, atMost, 1.0, "sandfs/native "+vs(sfs.unlink, nat.unlink))
	t.pair("FUSE readdir of 5,000 entries, ms: sandfs mirror vs go-fuse loopback", "ms", sfs.readdir, lb.readdir, atMost, 1.0, "sandfs/native "+vs(sfs.readdir, nat.readdir))
	return nil
}

// fsRun measures every FUSE figure once under dir.
func fsRun(f *fsFigures, dir string, nCreate, nStat int, mib int64) error {
	w, err := seqWrite(filepath.Join(dir, "w.bin"), mib)
	if err != nil {
		return err
	}
	f.write = append(f.write, w)
	seqRead(filepath.Join(dir, "big")) // warm
	r, err := seqRead(filepath.Join(dir, "big"))
	if err != nil {
		return err
	}
	f.read = append(f.read, r)
	statLoop(filepath.Join(dir, "stat1"), 1000)
	s, err := statLoop(filepath.Join(dir, "stat1"), nStat)
	if err != nil {
		return err
	}
	f.stat = append(f.stat, s)
	cr, un, err := createUnlink(dir, nCreate)
	if err != nil {
		return err
	}
	f.create, f.unlink = append(f.create, cr), append(f.unlink, un)
	readdir(filepath.Join(dir, "rd", "d00000"), 1)
	rd, err := readdir(filepath.Join(dir, "rd", "d00000"), 10)
	if err != nil {
		return err
	}
	f.readdir = append(f.readdir, rd)
	return nil
}

func seqWrite(p string, mib int64) (float64, error) {
	defer os.Remove(p)
	buf := make([]byte, 1<<20)
	t := time.Now()
	f, err := os.Create(p)
	if err != nil {
		return 0, err
	}
	for i := int64(0); i < mib; i++ {
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return 0, err
		}
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return 0, err
	}
	if err := f.Close(); err != nil {
		return 0, err
	}
	return float64(mib) / time.Since(t).Seconds(), nil
}

func seqRead(p string) (float64, error) {
	buf := make([]byte, 1<<20)
	t := time.Now()
	f, err := os.Open(p)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var n int64
	for {
		k, err := f.Read(buf)
		n += int64(k)
		if k == 0 || err != nil {
			break
		}
	}
	return float64(n) / (1 << 20) / time.Since(t).Seconds(), nil
}

func statLoop(p string, n int) (float64, error) {
	var st syscall.Stat_t
	t := time.Now()
	for i := 0; i < n; i++ {
		if err := syscall.Lstat(p, &st); err != nil {
			return 0, err
		}
	}
	return float64(time.Since(t).Nanoseconds()) / float64(n), nil
}

func createUnlink(dir string, n int) (float64, float64, error) {
	d := filepath.Join(dir, "cu")
	os.RemoveAll(d)
	if err := os.Mkdir(d, 0o755); err != nil {
		return 0, 0, err
	}
	defer os.RemoveAll(d)
	names := make([]string, n)
	for i := range names {
		names[i] = filepath.Join(d, "f"+strconv.Itoa(i))
	}
	t := time.Now()
	for _, p := range names {
		fd, err := syscall.Open(p, syscall.O_CREAT|syscall.O_WRONLY|syscall.O_EXCL|syscall.O_CLOEXEC, 0o644)
		if err != nil {
			return 0, 0, err
		}
		syscall.Close(fd)
	}
	cr := time.Since(t).Seconds()
	t = time.Now()
	for _, p := range names {
		if err := syscall.Unlink(p); err != nil {
			return 0, 0, err
		}
	}
	return cr, time.Since(t).Seconds(), nil
}

func readdir(p string, n int) (float64, error) {
	t := time.Now()
	for i := 0; i < n; i++ {
		f, err := os.Open(p)
		if err != nil {
			return 0, err
		}
		names, err := f.Readdirnames(-1)
		f.Close()
		if err != nil {
			return 0, err
		}
		if len(names) != 5000 {
			return 0, fmt.Errorf("readdir %s: %d names", p, len(names))
		}
	}
	return float64(time.Since(t).Microseconds()) / 1000 / float64(n), nil
}

// staleFigures: how long an outside change takes to show through the mount.
type staleFigures struct {
	lat        []float64 // µs from the append's return to the mount showing it
	staleFirst int       // appends whose first stat through the mount was stale
}

// staleWindow appends a byte to a file in the root n times, each time
// spinning on lstat through the mount until it shows the new size.
func staleWindow(f *staleFigures, root, mnt string, n int) error {
	p, m := filepath.Join(root, "stale"), filepath.Join(mnt, "stale")
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		return err
	}
	defer os.Remove(p)
	var st syscall.Stat_t
	for deadline := time.Now().Add(5 * time.Second); syscall.Lstat(m, &st) != nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			return fmt.Errorf("%s never appeared through the mount", m)
		}
	}
	w, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	defer w.Close()
	for i := 1; i <= n; i++ {
		if _, err := w.Write([]byte{'x'}); err != nil {
			return err
		}
		t := time.Now()
		for first := true; ; first = false {
			if err := syscall.Lstat(m, &st); err != nil {
				return err
			}
			if st.Size == int64(i) {
				break
			}
			if first {
				f.staleFirst++
			}
			if time.Since(t) > 5*time.Second {
				return fmt.Errorf("the mount never showed the append %d", i)
			}
		}
		f.lat = append(f.lat, float64(time.Since(t).Nanoseconds())/1e3)
		time.Sleep(2 * time.Millisecond)
	}
	return nil
}
