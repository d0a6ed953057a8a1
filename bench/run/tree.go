package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// mkTree makes dir holding ndirs directories of nfiles empty files each
// (kept across runs: made under dir.tmp, then renamed).
func mkTree(dir string, ndirs, nfiles int) error {
	if _, err := os.Stat(dir); err == nil {
		return nil
	}
	tmp := dir + ".tmp"
	os.RemoveAll(tmp)
	for d := 0; d < ndirs; d++ {
		sub := filepath.Join(tmp, fmt.Sprintf("d%05d", d))
		if err := os.MkdirAll(sub, 0o755); err != nil {
			return err
		}
		for f := 0; f < nfiles; f++ {
			fd, err := os.Create(filepath.Join(sub, fmt.Sprintf("f%04d.txt", f)))
			if err != nil {
				return err
			}
			fd.Close()
		}
	}
	return os.Rename(tmp, dir)
}

func timed(f func() error) (float64, error) {
	t := time.Now()
	err := f()
	return time.Since(t).Seconds(), err
}

func runGrep(c *cfg, t *table) error {
	if err := needApt("rg", "ripgrep"); err != nil {
		return err
	}
	tree := filepath.Join(c.work, "grep", "src")
	if _, err := os.Stat(tree); err != nil {
		os.MkdirAll(filepath.Dir(tree), 0o755)
		logf("copying %s/src for the grep tree", runtime.GOROOT())
		os.RemoveAll(tree + ".tmp")
		if out, err := exec.Command("cp", "-a", filepath.Join(runtime.GOROOT(), "src"), tree+".tmp").CombinedOutput(); err != nil {
			return fmt.Errorf("cp: %v %s", err, out)
		}
		if err := os.Rename(tree+".tmp", tree); err != nil {
			return err
		}
	}
	sd, err := startSandfs(c, tree)
	if err != nil {
		return err
	}
	defer sd.stop()
	size := dirSize(tree)
	pats := []string{"EINVAL", `func \w+Unlock\(`, "zq9xnotthere"}
	if c.quick {
		pats = pats[:2]
	}
	for _, pat := range pats {
		var s, a []float64
		var sn, an int
		for i := -1; i < c.runs; i++ { // run -1 warms both
			for _, k := range order(2, i+1) {
				if k == 0 {
					v, err := timed(func() (err error) { sn, err = grepSandfs(sd.base, pat); return })
					if err != nil {
						return err
					}
					if i >= 0 {
						s = append(s, v)
					}
				} else {
					v, err := timed(func() error {
						out, err := exec.Command("rg", "--json", "--no-ignore", "--hidden", pat, tree).Output()
						an = bytes.Count(out, []byte(`"type":"match"`))
						if _, ok := err.(*exec.ExitError); ok && an == 0 {
							err = nil // exit 1: no match
						}
						return err
					})
					if err != nil {
						return err
					}
					if i >= 0 {
						a = append(a, v)
					}
				}
			}
		}
		t.pair(fmt.Sprintf("grep `%s` in Go's src (%d MB), s: `POST /v2/fs/grep` vs `rg --json`", pat, size>>20), "s", s, a, atMost, 1.5,
			fmt.Sprintf("matching lines: %d / %d", sn, an))
	}
	return nil
}

func dirSize(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
		return nil
	})
	return n
}

// grepSandfs asks for every match (up to 10,000, the API bound, no size limit).
func grepSandfs(base, pat string) (int, error) {
	body, _ := json.Marshal(map[string]any{"path": "/", "pattern": pat, "max_results": 10000, "max_file_size": "1G", "exclude": []string{}})
	r, err := client.Post(base+"/v2/fs/grep", "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	defer r.Body.Close()
	var env struct {
		Data struct {
			MatchCount int `json:"match_count"`
		} `json:"data"`
	}
	if err := json.NewDecoder(r.Body).Decode(&env); err != nil || r.StatusCode != 200 {
		return 0, fmt.Errorf("grep %q: %d %v", pat, r.StatusCode, err)
	}
	return env.Data.MatchCount, nil
}

// runList: ten subtrees of 10,000 entries each (the API's cap of a listing)
// = 100,000 entries; sandfs lists each subtree recursively (ten requests),
// ls -lR lists the whole tree.
func runList(c *cfg, t *table) error {
	root := filepath.Join(c.work, "list")
	parts := 10
	if c.quick {
		parts = 3
	}
	for i := 0; i < parts; i++ {
		// 100 directories of 99 files: 10,000 entries.
		if err := mkTree(filepath.Join(root, fmt.Sprintf("part%d", i)), 100, 99); err != nil {
			return err
		}
	}
	sd, err := startSandfs(c, root)
	if err != nil {
		return err
	}
	defer sd.stop()
	listAll := func() error {
		for i := 0; i < parts; i++ {
			r, err := client.Get(fmt.Sprintf("%s/v2/fs/list?path=/part%d&recursive=true", sd.base, i))
			if err != nil {
				return err
			}
			b, _ := io.ReadAll(r.Body)
			r.Body.Close()
			if r.StatusCode != 200 || !bytes.Contains(b, []byte(`"total_count":10000`)) || bytes.Contains(b, []byte(`"truncated":true`)) {
				return fmt.Errorf("list part%d: %d %.200s", i, r.StatusCode, b)
			}
		}
		return nil
	}
	lsAll := func() error {
		args := []string{"-lR"}
		for i := 0; i < parts; i++ {
			args = append(args, filepath.Join(root, fmt.Sprintf("part%d", i)))
		}
		cmd := exec.Command("ls", args...)
		cmd.Stdout = io.Discard
		return cmd.Run()
	}
	listAll()
	lsAll()
	var s, a []float64
	for i := 0; i < c.runs; i++ {
		for _, k := range order(2, i) {
			f, dst := listAll, &s
			if k == 1 {
				f, dst = lsAll, &a
			}
			v, err := timed(f)
			if err != nil {
				return err
			}
			*dst = append(*dst, v)
		}
	}
	t.pair(fmt.Sprintf("recursive list of %s entries, s: `GET /v2/fs/list?recursive=true` vs `ls -lR`", commas(int64(parts*10000))), "s", s, a, atMost, 2,
		fmt.Sprintf("%d requests of 10,000 entries (the API's cap of one listing)", parts))
	return nil
}

// runStart: a daemon on a root of 100,000 files in 10,000 directories:
// time to serving (/health answers) and to the kernel watch covering the
// tree (the daemon's log line "kernel watch ready").
func runStart(c *cfg, t *table) error {
	root := filepath.Join(c.work, "start")
	if err := mkTree(root, 10_000, 10); err != nil {
		return err
	}
	var serving, ready []float64
	n := c.runs
	for i := 0; i < n; i++ {
		addr := freePort()
		t0 := time.Now()
		st := stateDir(c)
		p, err := withState(st)(startProc("", addr, "", c.bin, "serve", "--root", root, "--listen", addr, "--no-auth", "--state", st))
		if err != nil {
			return err
		}
		err = waitHTTP("http://"+addr+"/health", 30*time.Second)
		serving = append(serving, time.Since(t0).Seconds())
		if err == nil {
			err = p.waitLog("kernel watch ready", 60*time.Second)
			ready = append(ready, time.Since(t0).Seconds())
		}
		p.stop()
		if err != nil {
			return err
		}
	}
	ms, mr := median(serving), median(ready)
	t.single("daemon start on 100,000 files in 10,000 dirs: serving (`/health` answers)", fmt.Sprintf("%.2f s", ms), "—", "≤ 2 s", ms <= 2, "")
	t.single("daemon start on 100,000 files in 10,000 dirs: kernel watch complete", fmt.Sprintf("%.2f s", mr), "—", "≤ 5 s", mr <= 5,
		"told by the log line `kernel watch ready` (directories=N)")
	_ = strings.Contains
	return nil
}
