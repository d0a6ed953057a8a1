package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// The FUSE rows: the same operations on the native root, on sandfs's
// mirror of it (serve --mount with its defaults: passthrough, one minute
// caches invalidated from the journal) and on go-fuse's loopback example of
// it (1 s caches, stale), each mounted in turn, run by run. The data rows
// (read, write, stat) use a root on the disk; the metadata rows (create,
// unlink, readdir) a root on tmpfs, against the loopback mounted both ways
// (see runFUSE). Every operation runs here, in the harness.

type fsFigures struct {
	write, read, stat, create, unlink, readdir, open []float64
}

func runFUSE(c *cfg, t *table) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("the FUSE rows need root")
	}
	if err := needApt("fusermount3", "fuse3"); err != nil {
		return err
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
	nCreate, nStat := 250, 100_000
	if c.quick {
		nCreate, nStat = 60, 5_000
	}
	var nat, sfs, lb fsFigures
	var stale staleFigures
	for i := 0; i < c.runs; i++ {
		logf("fuse run %d", i+1)
		for _, k := range order(3, i) {
			switch k {
			case 0:
				if err := dataRun(&nat, root, nStat, c.bigMiB); err != nil {
					return fmt.Errorf("native: %w", err)
				}
			case 1:
				p, err := startMount(c, root, mnt)
				if err != nil {
					return err
				}
				err = dataRun(&sfs, mnt, nStat, c.bigMiB)
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
				err = dataRun(&lb, mnt, nStat, c.bigMiB)
				p.stop()
				if err != nil {
					return fmt.Errorf("loopback: %w", err)
				}
			}
		}
	}
	top, nested, err := runMeta(c, nCreate)
	if err != nil {
		return err
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
	metaNote := func(unit string, s, p, n []float64) string {
		return fmt.Sprintf("tmpfs roots, %d rounds of %d; vs the loopback's private default (no permission checks): %s = %sx; sandfs/native %s",
			len(s), nCreate, num(median(p), unit), vs(s, p), vs(s, n))
	}
	for _, lv := range []struct {
		where string
		m     *[5]fsFigures
	}{{"", &top}, {" in a/b/c/ below the top", &nested}} {
		mNat, mSfs, mShared, mPrivate, mMem := lv.m[0], lv.m[1], lv.m[2], lv.m[3], lv.m[4]
		t.pair("FUSE create"+lv.where+", µs/op: sandfs mirror vs go-fuse loopback -allow-other (the same mount options)", "µs",
			mSfs.create, mShared.create, atMost, 1.0, metaNote("µs", mSfs.create, mPrivate.create, mNat.create))
		t.pair("FUSE unlink"+lv.where+", µs/op: sandfs mirror vs go-fuse loopback -allow-other (the same mount options)", "µs",
			mSfs.unlink, mShared.unlink, atMost, 1.0, metaNote("µs", mSfs.unlink, mPrivate.unlink, mNat.unlink))
		durable := fmt.Sprintf("tmpfs roots, %d rounds of %d, taking turns with the rows above; the durable journal copies each event into its mmap'd tail and batches it into SQLite", len(mSfs.create), nCreate)
		t.pair("FUSE create"+lv.where+", µs/op: sandfs with its durable journal (default) vs sandfs --no-history (in memory)", "µs",
			mSfs.create, mMem.create, atMost, 1.2, durable)
		t.pair("FUSE unlink"+lv.where+", µs/op: sandfs with its durable journal (default) vs sandfs --no-history (in memory)", "µs",
			mSfs.unlink, mMem.unlink, atMost, 1.2, durable)
		t.pair("FUSE readdir of 5,000 entries"+lv.where+", ms: sandfs mirror vs go-fuse loopback -allow-other (the same mount options)", "ms",
			mSfs.readdir, mShared.readdir, atMost, 1.0, metaNote("ms", mSfs.readdir, mPrivate.readdir, mNat.readdir))
		t.pair("FUSE open, read 4 KiB, close"+lv.where+", µs/op: sandfs mirror vs go-fuse loopback -allow-other (the same mount options)", "µs",
			mSfs.open, mShared.open, atMost, 0, metaNote("µs", mSfs.open, mPrivate.open, mNat.open)+"; a read-only handle is opened FOPEN_NOFLUSH: its close sends no FLUSH")
	}
	return nil
}

// runMeta measures the metadata figures (create, unlink, readdir) on tmpfs:
// this VM's ext4 has no journal, and without one ext4 skips every inode
// freed in the last minutes when it allocates (recently_deleted), so a
// native create there costs from 0.1 to 4.6 ms depending on how many files
// were deleted before it: the row would measure the order of the runs, not
// the mirror. The four kinds (native, sandfs, the loopback with
// -allow-other, the loopback with its defaults) each get a root of their
// own beside the others, all mounted at once, and take turns in rounds of
// nCreate files, so a slow moment of the shared machine falls on all of
// them. -allow-other mounts the loopback shared with the kernel checking
// permissions (allow_other,default_permissions), as sandfs mounts (api.md
// §7); the loopback's private default skips the permission checks, and with
// them the refresh of a changed directory's attributes that each check
// needs (one GETATTR more per create and per unlink). Each round measures
// every kind twice, at the top of its root and in a/b/c/ below it (top
// first in even rounds, nested first in odd ones); the figures are in the
// order of kinds.
func runMeta(c *cfg, nCreate int) (top, nested [5]fsFigures, err error) {
	meta, err := tmpfsDir(c, "fuse-meta")
	if err != nil {
		return
	}
	defer os.RemoveAll(meta)
	kinds := []string{"native", "sandfs", "shared", "private", "memory"}
	dirs := make([]string, len(kinds))
	for i, k := range kinds {
		root := filepath.Join(meta, k)
		if err = mkTree(filepath.Join(root, "rd"), 1, 5000); err != nil {
			return
		}
		if err = mkTree(filepath.Join(root, metaNested, "rd"), 1, 5000); err != nil {
			return
		}
		for _, d := range []string{root, filepath.Join(root, metaNested)} {
			if err = os.WriteFile(filepath.Join(d, "small"), make([]byte, 4096), 0o644); err != nil {
				return
			}
		}
		dirs[i] = root
		var p *proc
		mnt := filepath.Join(c.work, "mnt-"+k)
		switch k {
		case "sandfs":
			p, err = startMount(c, root, mnt)
		case "memory": // the journal in memory only: what the durable one costs
			p, err = startMount(c, root, mnt, "--no-history")
		case "shared":
			p, err = startLoopback(c, root, mnt, "-allow-other")
		case "private":
			p, err = startLoopback(c, root, mnt)
		}
		if err != nil {
			return
		}
		if p != nil {
			defer p.stop()
			dirs[i] = mnt
		}
	}
	time.Sleep(time.Second) // the mirror's first walk
	rounds := 4 * c.runs
	for r := 0; r < rounds; r++ {
		if r%c.runs == 0 {
			logf("fuse metadata round %d of %d", r+1, rounds)
		}
		for _, k := range order(len(kinds), r) {
			levels := []*fsFigures{&top[k], &nested[k]}
			subs := []string{"", metaNested}
			if r%2 == 1 {
				levels[0], levels[1], subs[0], subs[1] = levels[1], levels[0], subs[1], subs[0]
			}
			for l := range levels {
				if err = metaRun(levels[l], filepath.Join(dirs[k], subs[l]), nCreate); err != nil {
					err = fmt.Errorf("%s: %w", kinds[k], err)
					return
				}
			}
		}
	}
	return
}

// metaNested is where the nested metadata rows run, below each root.
const metaNested = "a/b/c"

// tmpfsDir is a fresh directory on /dev/shm (a tmpfs), else under c.work.
func tmpfsDir(c *cfg, name string) (string, error) {
	base := "/dev/shm"
	var st syscall.Statfs_t
	if syscall.Statfs(base, &st) != nil || st.Type != 0x01021994 {
		base = c.work
	}
	d := filepath.Join(base, "sandfs-bench-"+name)
	os.RemoveAll(d)
	return d, os.MkdirAll(d, 0o755)
}

// dataRun measures the data figures (write, read, stat) once under dir.
func dataRun(f *fsFigures, dir string, nStat int, mib int64) error {
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
	return nil
}

// metaRun measures the metadata figures (create, unlink, readdir) once
// under dir.
func metaRun(f *fsFigures, dir string, nCreate int) error {
	cr, un, err := createUnlink(dir, nCreate)
	if err != nil {
		return err
	}
	f.create, f.unlink = append(f.create, cr), append(f.unlink, un)
	readdir(filepath.Join(dir, "rd", "d00000"), 1)
	rd, err := readdir(filepath.Join(dir, "rd", "d00000"), 2)
	if err != nil {
		return err
	}
	f.readdir = append(f.readdir, rd)
	op, err := openRead(filepath.Join(dir, "small"), nCreate)
	if err != nil {
		return err
	}
	f.open = append(f.open, op)
	return nil
}

// openRead opens p read-only, reads it whole and closes it n times, and
// gives µs per round.
func openRead(p string, n int) (float64, error) {
	return openReadEach(slices.Repeat([]string{p}, n))
}

// openReadEach opens each of paths read-only, reads its 4 KiB whole and
// closes it, and gives µs per path.
func openReadEach(paths []string) (float64, error) {
	buf := make([]byte, 8192)
	t := time.Now()
	for _, p := range paths {
		fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
		if err != nil {
			return 0, err
		}
		k, err := syscall.Read(fd, buf)
		syscall.Close(fd)
		if err != nil || k != 4096 {
			return 0, fmt.Errorf("read %s: %d bytes, %v", p, k, err)
		}
	}
	return float64(time.Since(t).Nanoseconds()) / 1e3 / float64(len(paths)), nil
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

// createUnlink creates n empty files in a fresh directory under dir, then
// unlinks them, and gives µs per create and per unlink.
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
	cr := float64(time.Since(t).Nanoseconds()) / 1e3 / float64(n)
	t = time.Now()
	for _, p := range names {
		if err := syscall.Unlink(p); err != nil {
			return 0, 0, err
		}
	}
	return cr, float64(time.Since(t).Nanoseconds()) / 1e3 / float64(n), nil
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
