package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// The forkio rows: what reading and writing a fork costs against the
// plain sandbox it was made from. One daemon (`--mount-all`) serves both:
// default, a tree of 10,000 files of 4 KiB in 100 directories, and a fork
// of its checkpoint (an overlay: the checkpoint's made tree beneath, the
// fork's writes above), each mounted at MNTDIR/NAME. The same requests and
// the same file operations go to each, taking turns, so the only
// difference is the sandbox they land in. Root and state are on tmpfs, so
// the plain root and the fork's layers sit on the same filesystem.

const (
	fioFiles = 10_000
	fioDirs  = 100
	fioLower = 5_000 // files [0, fioLower): never written, the fork reads them from its lower
	fioUpper = 6_000 // files [fioLower, fioUpper): written once in both before the rows, the fork's own
	fioConns = 32
	fioFork  = "fork"
)

// fioNames are the two kinds: the plain sandbox, then its fork.
var fioNames = []string{"default", fioFork}

func fioPath(i int) string { return fmt.Sprintf("/d%02d/f%06d", i%fioDirs, i) }

// fioBody is file i's content: a first line of its own, so the
// checkpoint's store holds one object per file and the fork's reads are
// not all of one shared page.
func fioBody(i int) []byte {
	b := bytes.Repeat([]byte("x"), 4096)
	copy(b, fmt.Sprintf("file %06d\n", i))
	b[4095] = '\n'
	return b
}

func runForkIO(c *cfg, t *table) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("a fork's overlay needs root")
	}
	if err := needApt("fusermount3", "fuse3"); err != nil {
		return err
	}
	dir, err := tmpfsDir(c, "forkio")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	root, state, mnt := filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "mnt")
	for i := 0; i < fioFiles; i++ {
		p := filepath.Join(root, fioPath(i))
		if i < fioDirs {
			os.MkdirAll(filepath.Dir(p), 0o755)
		}
		if err := os.WriteFile(p, fioBody(i), 0o644); err != nil {
			return err
		}
	}
	addr, dbg := freePort(), freePort()
	p, err := startProc("", addr, "/health", c.bin, "serve", "--root", root, "--listen", addr, "--no-auth",
		"--state", state, "--mount-all", mnt, "--debug-listen", dbg)
	if err != nil {
		return err
	}
	defer fioStop(p, state, mnt)
	logf("forkio: daemon pid %d, profiles at http://%s/debug/pprof/", p.pid(), dbg)
	var cp struct{ ID string }
	if err := call("POST", p.base+"/v1/sandboxes/default/checkpoints", map[string]any{}, &cp); err != nil {
		return err
	}
	var fk struct {
		Copy    bool
		CopyWhy string
	}
	t0 := time.Now()
	if err := call("POST", p.base+"/v1/sandboxes", map[string]any{"name": fioFork, "from": "default", "checkpoint": cp.ID}, &fk); err != nil {
		return err
	}
	made := time.Since(t0)
	for _, n := range fioNames {
		if err := waitMount(filepath.Join(mnt, n)); err != nil {
			return err
		}
	}
	how := "an overlay"
	if fk.Copy {
		how = "a copy (" + fk.CopyWhy + ")"
	}
	logf("forkio: fork made in %v, %s", made.Round(time.Millisecond), how)
	for _, n := range fioNames {
		for i := fioLower; i < fioUpper; i++ {
			if err := fioRequest(p.base, n, "PUT", i, fioBody(i)); err != nil {
				return err
			}
		}
	}
	setup := fmt.Sprintf("one daemon (`--mount-all`, no token, durable journal) serving a 10,000-file tree of 4 KiB files in 100 directories and a fork of its checkpoint (%s, made in %v with the checkpoint's made tree); root and state on tmpfs",
		how, made.Round(time.Millisecond))
	if err := fioRESTRows(c, t, p, setup); err != nil {
		return err
	}
	if err := fioFloorRow(c, t, [2]string{root, filepath.Join(state, "forks", fioFork, "root")}); err != nil {
		return err
	}
	return fioMountRows(c, t, p, mnt)
}

// fioRequest sends one request of the rows to sandbox name's file i: a
// GET that must answer its 4 KiB, or a PUT of body.
func fioRequest(base, name, method string, i int, body []byte) error {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, _ := http.NewRequest(method, base+"/v1/fs/file?path="+q(fioPath(i)), rd)
	req.Header.Set("X-Sandfs-Sandbox", name)
	r, err := client.Do(req)
	if err != nil {
		return err
	}
	n, _ := io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || (method == "GET" && n != 4096) {
		return fmt.Errorf("%s %s of %s: %d, %d bytes", method, fioPath(i), name, r.StatusCode, n)
	}
	return nil
}

// fioRESTRows: reads of the fork's lower, reads of its upper and writes,
// each kind driven by 32 keep-alive connections for c.dur, the plain
// sandbox and the fork in the order of a Williams design, run by run.
func fioRESTRows(c *cfg, t *table, p *proc, setup string) error {
	body := bytes.Repeat([]byte("w"), 4096)
	figs := []struct {
		name   string
		lo, n  int
		method string
	}{
		{"4 KiB `GET /v1/fs/file` of files the fork never wrote (read from its overlay's lower)", 0, fioLower, "GET"},
		{"4 KiB `GET /v1/fs/file` of files the fork wrote (its overlay's upper)", fioLower, fioUpper - fioLower, "GET"},
		{"4 KiB `PUT /v1/fs/file` replacing files of the tree", fioUpper, fioFiles - fioUpper, "PUT"},
	}
	rate := make([][2][]float64, len(figs))
	cpu := make([][2][]float64, len(figs))
	for r := 0; r < c.runs; r++ {
		logf("forkio REST run %d of %d", r+1, c.runs)
		for f, fig := range figs {
			for _, k := range order(2, r+f) {
				name := fioNames[k]
				v, us, err := drive(p.pid(), fioConns, c.dur, func(i, j int) error {
					var b []byte
					if fig.method == "PUT" {
						b = body
					}
					return fioRequest(p.base, name, fig.method, fig.lo+(j*fioConns+i)%fig.n, b)
				})
				if err != nil {
					return err
				}
				rate[f][k], cpu[f][k] = append(rate[f][k], v), append(cpu[f][k], us)
			}
		}
	}
	for f, fig := range figs {
		if f > 0 {
			setup = "the daemon and fork of the first forkio row"
		}
		note := fmt.Sprintf("%s; %d keep-alive connections on the sandbox-agent route with `X-Sandfs-Sandbox: NAME`, %v per kind per run; server CPU per request: fork %.0f µs, plain %.0f µs",
			setup, fioConns, c.dur, median(cpu[f][1]), median(cpu[f][0]))
		if fig.method == "PUT" {
			note += fmt.Sprintf("; the targets are 4,000 files the fork had not written before the rows (its lower until its first write of each: the first %d of its writes), each connection on files of its own", fioFiles-fioUpper)
		}
		t.pair(fig.name+", requests/s: a fork vs the plain sandbox it was made from, on one daemon (fork within 1.2x)", "req/s",
			rate[f][1], rate[f][0], atLeast, 1/1.2, note)
	}
	return nil
}

// fioStop discards the fork (its DELETE unmounts its mirror and its
// overlay, which would outlive the daemon otherwise) and stops the
// daemon; then unmounts whatever a failed DELETE left.
func fioStop(p *proc, state, mnt string) {
	if err := call("DELETE", p.base+"/v1/sandboxes/"+fioFork, nil, nil); err != nil {
		logf("forkio: discarding the fork: %v", err)
	}
	p.stop()
	for _, n := range fioNames {
		if m := filepath.Join(mnt, n); isMount(m) {
			exec.Command("fusermount3", "-u", m).Run()
		}
	}
	if m := filepath.Join(state, "forks", fioFork, "root"); isMount(m) {
		syscall.Unmount(m, syscall.MNT_DETACH)
	}
}
