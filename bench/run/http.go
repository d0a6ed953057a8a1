package main

import (
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// ensureFile makes path of size bytes of random data (kept across runs).
func ensureFile(path string, size int64) error {
	if fi, err := os.Stat(path); err == nil && fi.Size() == size {
		return nil
	}
	os.MkdirAll(filepath.Dir(path), 0o755)
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	buf := make([]byte, 1<<20)
	for left := size; left > 0; {
		rand.Read(buf)
		n := min(left, int64(len(buf)))
		if _, err := f.Write(buf[:n]); err != nil {
			f.Close()
			return err
		}
		left -= n
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}

var client = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64, DisableCompression: true}}

// download GETs u into a 1 MiB buffer and returns MiB/s.
func download(u string, want int64) (float64, error) {
	start := time.Now()
	r, err := client.Get(u)
	if err != nil {
		return 0, err
	}
	defer r.Body.Close()
	buf := make([]byte, 1<<20)
	var n int64
	for {
		k, err := r.Body.Read(buf)
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
	}
	if r.StatusCode != 200 || n != want {
		return 0, fmt.Errorf("GET %s: %d, %d bytes (want %d)", u, r.StatusCode, n, want)
	}
	return float64(n) / (1 << 20) / time.Since(start).Seconds(), nil
}

// put PUTs the file src to u and returns MiB/s.
func put(u, src string) (float64, error) {
	f, err := os.Open(src)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, _ := f.Stat()
	req, _ := http.NewRequest("PUT", u, f)
	req.ContentLength = fi.Size()
	req.Header.Set("Content-Type", "application/octet-stream")
	start := time.Now()
	r, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	if r.StatusCode != 200 {
		return 0, fmt.Errorf("PUT %s: %d %s", u, r.StatusCode, b)
	}
	return float64(fi.Size()) / (1 << 20) / time.Since(start).Seconds(), nil
}

// cpuTicks is the user+system CPU time pid has used, in clock ticks (10 ms).
func cpuTicks(pid int) float64 {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseFloat(f[11], 64)
	k, _ := strconv.ParseFloat(f[12], 64)
	return u + k
}

// rps runs conns clients GETting u back to back for d and returns the
// requests answered 200 per second, and the server pid's CPU time per
// request in µs (less sensitive to the load of other sessions than the
// rate). Any other answer is an error.
func rps(u string, pid, conns int, d time.Duration) (float64, float64, error) {
	req, _ := http.NewRequest("GET", u, nil)
	return drive(pid, conns, d, func(int, int) error { return want200(req) })
}

// want200 sends req and reads its answer, which must be 200.
func want200(req *http.Request) error {
	r, err := client.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if r.StatusCode != 200 {
		return fmt.Errorf("%s %s: %d", req.Method, req.URL, r.StatusCode)
	}
	return nil
}

// drive runs conns clients, each calling do(client, j) for its j-th
// request back to back, for d after a warm-up of d/5 (connections made,
// caches warm), and returns the requests done per second and the server
// pid's CPU time per request in µs. An error ends its client and is
// returned.
func drive(pid, conns int, d time.Duration, do func(client, j int) error) (float64, float64, error) {
	v, us, err := driveCPU([]int{pid}, conns, d, do)
	if err != nil {
		return 0, 0, err
	}
	return v, us[0], nil
}

// driveCPU is drive with the CPU time per request of each of pids.
func driveCPU(pids []int, conns int, d time.Duration, do func(client, j int) error) (float64, []float64, error) {
	var n atomic.Int64
	var bad atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < conns; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := do(i, j); err != nil {
					bad.Store(err.Error())
					return
				}
				n.Add(1)
			}
		}()
	}
	ticks := func() []float64 {
		t := make([]float64, len(pids))
		for i, p := range pids {
			t[i] = cpuTicks(p)
		}
		return t
	}
	time.Sleep(d / 5)
	n0, t0, c0 := n.Load(), time.Now(), ticks()
	time.Sleep(d)
	n1, t1, c1 := n.Load(), time.Now(), ticks()
	close(stop)
	wg.Wait()
	if v := bad.Load(); v != nil {
		return 0, nil, fmt.Errorf("%v", v)
	}
	us := make([]float64, len(pids))
	for i := range pids {
		us[i] = (c1[i] - c0[i]) * 1e4 / float64(n1-n0)
	}
	return float64(n1-n0) / t1.Sub(t0).Seconds(), us, nil
}

func q(p string) string { return url.QueryEscape(p) }

// httpRoot is the root the download, rps and PUT rows share: a big file,
// a small one to stat, a 4 KiB one to read.
func httpRoot(c *cfg) (string, error) {
	root := filepath.Join(c.work, "http")
	if err := ensureFile(filepath.Join(root, "big"), c.bigMiB<<20); err != nil {
		return "", err
	}
	if err := ensureFile(filepath.Join(root, "f4k"), 4096); err != nil {
		return "", err
	}
	return root, os.WriteFile(filepath.Join(root, "stat1"), []byte("hello\n"), 0o644)
}

func runDownload(c *cfg, t *table) error {
	if err := needApt("nginx", "nginx-light"); err != nil {
		return err
	}
	root, err := httpRoot(c)
	if err != nil {
		return err
	}
	sd, err := startSandfs(c, root)
	if err != nil {
		return err
	}
	defer sd.stop()
	ng, err := startNginx(c, root)
	if err != nil {
		return err
	}
	defer ng.stop()
	size := c.bigMiB << 20
	su, nu := sd.base+"/v2/fs/download?path=/big", ng.base+"/big"
	download(su, size) // warm the page cache
	var s, a []float64
	// A transfer takes a fraction of a second, and this VM's loopback
	// throughput swings by a third from one to the next: three times the
	// runs of the other pairs, for a steadier median.
	for i := 0; i < 3*c.runs; i++ {
		for _, k := range order(2, i) {
			if k == 0 {
				v, err := download(su, size)
				if err != nil {
					return err
				}
				s = append(s, v)
			} else {
				v, err := download(nu, size)
				if err != nil {
					return err
				}
				a = append(a, v)
			}
		}
	}
	t.pair(fmt.Sprintf("download %d MiB warm, MiB/s: `GET /v2/fs/download` vs nginx (sendfile)", c.bigMiB), "MiB/s", s, a, atLeast, 0.9, fmt.Sprintf("one connection, loopback; %d alternating runs", 3*c.runs))
	return nil
}

// order is the order of n kinds in run i: a row of a Williams design.
// Over n runs (2n when n is odd) every kind runs in every position and
// right after every other kind equally often, so what one kind leaves
// behind (the kernel's deferred frees of the files it removed, a cache it
// filled) falls on each of the others alike. Alternating forward and
// backward runs, as before, put the same neighbours before a kind every
// time: with the loopback in both of the fuse group's metadata slots,
// unlink read 1.01 to 1.07 in four runs.
func order(n, i int) []int {
	base := make([]int, n) // 0, 1, n-1, 2, n-2, …
	for j := 1; j < n; j++ {
		if j%2 == 1 {
			base[j] = (j + 1) / 2
		} else {
			base[j] = n - j/2
		}
	}
	rows := n
	if n%2 == 1 {
		rows = 2 * n // an odd square and its mirror
	}
	r := i % rows
	k := make([]int, n)
	for j := range k {
		k[j] = (base[j] + r) % n
	}
	if r >= n {
		for a, b := 0, n-1; a < b; a, b = a+1, b-1 {
			k[a], k[b] = k[b], k[a]
		}
	}
	return k
}

func runRPS(c *cfg, t *table) error {
	if err := needAgent(c); err != nil {
		return err
	}
	root, err := httpRoot(c)
	if err != nil {
		return err
	}
	sd, ag, err := startPair(c, root)
	if err != nil {
		return err
	}
	defer sd.stop()
	defer ag.stop()
	for _, fig := range []struct{ name, route, file string }{
		{"`GET /v1/fs/stat` requests/s, 32 connections", "/v1/fs/stat", "stat1"},
		{"4 KiB `GET /v1/fs/file` requests/s, 32 connections", "/v1/fs/file", "f4k"},
	} {
		su := sd.base + fig.route + "?path=" + q("/"+fig.file)
		au := ag.base + fig.route + "?path=" + q(filepath.Join(root, fig.file))
		var s, a, sc, ac []float64
		for i := 0; i < c.runs; i++ {
			for _, k := range order(2, i) {
				u, pid, dst, cpu := su, sd.pid(), &s, &sc
				if k == 1 {
					u, pid, dst, cpu = au, ag.pid(), &a, &ac
				}
				v, us, err := rps(u, pid, 32, c.dur)
				if err != nil {
					return err
				}
				*dst, *cpu = append(*dst, v), append(*cpu, us)
			}
		}
		t.pair(fig.name+" vs sandbox-agent", "req/s", s, a, atLeast, 1.2,
			fmt.Sprintf("server CPU per request: sandfs %.0f µs, sandbox-agent %.0f µs (%.2fx); Go client in the harness, keep-alive, sharing the cores", median(sc), median(ac), median(sc)/median(ac)))
	}
	return nil
}

// startPair starts sandfs serving root and the sandbox-agent server.
func startPair(c *cfg, root string) (sd, ag *proc, err error) {
	if sd, err = startSandfs(c, root); err != nil {
		return nil, nil, err
	}
	if ag, err = startAgent(c); err != nil {
		sd.stop()
		return nil, nil, err
	}
	return sd, ag, nil
}

// runPut: sandbox-agent refuses a body over 2 MiB (413 "Failed to buffer
// the request body": it buffers bodies in memory), so the PUT pair is
// measured at 2 MiB (a series of PUTs of the same file), and the 512 MiB
// PUT against dd conv=fsync of the same bytes, with the daemon's peak RSS.
func runPut(c *cfg, t *table) error {
	if err := needAgent(c); err != nil {
		return err
	}
	root, err := httpRoot(c)
	if err != nil {
		return err
	}
	src := filepath.Join(c.work, "put-src.bin")
	if err := ensureFile(src, c.bigMiB<<20); err != nil {
		return err
	}
	small := filepath.Join(c.work, "put-2m.bin")
	if err := ensureFile(small, 2<<20); err != nil {
		return err
	}
	sd, ag, err := startPair(c, root)
	if err != nil {
		return err
	}
	defer sd.stop()
	defer ag.stop()
	dst := filepath.Join(root, "put.bin")
	series := func(u string) (float64, error) {
		n := 40
		if c.quick {
			n = 15
		}
		t0 := time.Now()
		for i := 0; i < n; i++ {
			if _, err := put(u, small); err != nil {
				return 0, err
			}
		}
		return float64(2*n) / time.Since(t0).Seconds(), nil
	}
	var s2, a2, s, a, rss, arss []float64
	for i := 0; i < c.runs; i++ {
		for _, k := range order(2, i) {
			os.Remove(dst)
			if k == 0 {
				v, err := series(sd.base + "/v1/fs/file?path=/put.bin")
				if err != nil {
					return err
				}
				s2 = append(s2, v)
				os.Remove(dst)
				rssHWM(sd.pid(), true)
				v, err = put(sd.base+"/v1/fs/file?path=/put.bin", src)
				if err != nil {
					return err
				}
				s = append(s, v)
				rss = append(rss, rssHWM(sd.pid(), false))
			} else {
				rssHWM(ag.pid(), true)
				v, err := series(ag.base + "/v1/fs/file?path=" + q(dst))
				if err != nil {
					return err
				}
				a2 = append(a2, v)
				arss = append(arss, rssHWM(ag.pid(), false))
				os.Remove(dst)
				v, err = ddFsync(src, dst)
				if err != nil {
					return err
				}
				a = append(a, v)
			}
		}
	}
	os.Remove(dst)
	t.pair("PUT 2 MiB `/v1/fs/file` back to back, MiB/s, vs sandbox-agent", "MiB/s", s2, a2, atLeast, 1.0,
		"sandbox-agent refuses bodies over 2 MiB (413), so the pair is measured at its largest; sandfs fsyncs each file before renaming it in place")
	t.pair(fmt.Sprintf("PUT %d MiB `/v1/fs/file`, MiB/s, vs `dd bs=1M conv=fsync` of the same bytes", c.bigMiB), "MiB/s", s, a, atLeast, 0,
		"no server anchor at this size (see above); dd is the floor of a local copy")
	mx := 0.0
	for _, v := range rss {
		mx = max(mx, v)
	}
	t.single(fmt.Sprintf("daemon peak RSS (VmHWM) during the %d MiB PUT", c.bigMiB), fmt.Sprintf("%.1f MiB (max of runs)", mx),
		fmt.Sprintf("sandbox-agent over 2 MiB PUTs: %.1f MiB", median(arss)), "≤ 64 MiB", mx > 0 && mx <= 64, "peak reset through clear_refs before each PUT")
	return nil
}

// ddFsync copies src to dst with dd bs=1M conv=fsync and returns MiB/s.
func ddFsync(src, dst string) (float64, error) {
	fi, err := os.Stat(src)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	if out, err := exec.Command("dd", "if="+src, "of="+dst, "bs=1M", "conv=fsync", "status=none").CombinedOutput(); err != nil {
		return 0, fmt.Errorf("dd: %v %s", err, out)
	}
	return float64(fi.Size()) / (1 << 20) / time.Since(t0).Seconds(), nil
}
