package main

// Running the suite: one `prove -r -v` per top-level group, -j groups at a
// time, each in a directory of its own.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
)

// runSuite runs each group with `prove -r -v` in base/GROUP, jobs at a time,
// and returns the results of every file.
func runSuite(ctx context.Context, c config, groups []string, base, half string) (map[string]*fileResult, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	testsDir := filepath.Join(c.build, "tests")
	all := map[string]*fileResult{}
	var mu sync.Mutex
	var firstErr error
	todo := make(chan string)
	var wg sync.WaitGroup
	for range max(c.jobs, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for g := range todo {
				res, err := runGroup(ctx, c, testsDir, g, base, half)
				mu.Lock()
				for k, v := range res {
					all[k] = v
				}
				if err != nil && firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	for _, g := range groups {
		todo <- g
	}
	close(todo)
	wg.Wait()
	if firstErr == nil && ctx.Err() != nil {
		firstErr = fmt.Errorf("%s half: %w", half, ctx.Err())
	}
	return all, firstErr
}

// runGroup runs one group. prove exits non-zero when a test fails: that is
// a result, not an error; an error is prove not running or being stopped.
func runGroup(ctx context.Context, c config, testsDir, group, base, half string) (map[string]*fileResult, error) {
	dir := filepath.Join(base, group)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.logs, half+"-"+group+".log")
	var out bytes.Buffer
	cmd := exec.Command("prove", "-r", "-v", filepath.Join(testsDir, group))
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		_ = os.WriteFile(logPath, out.Bytes(), 0o644)
		return nil, fmt.Errorf("%s %s: %w", half, group, ctx.Err())
	}
	if werr := os.WriteFile(logPath, out.Bytes(), 0o644); werr != nil {
		return nil, werr
	}
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("%s %s: prove: %w", half, group, err)
	}
	res, perr := parseProve(bytes.NewReader(out.Bytes()), testsDir)
	if perr != nil {
		return res, fmt.Errorf("%s %s: %w", half, group, perr)
	}
	if len(res) == 0 {
		return res, fmt.Errorf("%s %s: prove ran no file (exit %v; log: %s)", half, group, err, logPath)
	}
	return res, nil
}

// slowest is the group that takes longest: chown/00.t sleeps a second
// before each of its ctime checks (about 2 minutes on the root, 3 on the
// mount), so it starts first and the others run beside it.
const slowest = "chown"

// listGroups lists the suite's groups (tests/chmod, …), the slowest first,
// then the largest, so the long ones do not start last.
func listGroups(testsDir string, only map[string]bool) ([]string, error) {
	ents, err := os.ReadDir(testsDir)
	if err != nil {
		return nil, err
	}
	size := map[string]int{}
	var groups []string
	for _, e := range ents {
		if !e.IsDir() || (only != nil && !only[e.Name()]) {
			continue
		}
		ts, _ := filepath.Glob(filepath.Join(testsDir, e.Name(), "*.t"))
		if len(ts) == 0 {
			continue
		}
		size[e.Name()] = len(ts)
		groups = append(groups, e.Name())
	}
	for g := range only {
		if _, ok := size[g]; !ok {
			return nil, fmt.Errorf("no group %q in %s", g, testsDir)
		}
	}
	sort.Slice(groups, func(i, j int) bool {
		if (groups[i] == slowest) != (groups[j] == slowest) {
			return groups[i] == slowest
		}
		if size[groups[i]] != size[groups[j]] {
			return size[groups[i]] > size[groups[j]]
		}
		return groups[i] < groups[j]
	})
	return groups, nil
}
