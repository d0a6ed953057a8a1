// Command conformance runs the pjdfstest POSIX suite (vendored in
// integration/testdata/pjdfstest) twice, as root under umask 022: in a fresh
// directory of the backing filesystem (the root, the oracle), then inside a
// fresh sandfs FUSE mount of a root on that same filesystem. It prints both
// summaries and exits 1 when a test fails on the mount that passes on the
// root; a test failing on the root too is reported as the root's.
//
// It builds pjdfstest itself (a copy of the vendored source under -build,
// autoreconf -ifs && ./configure && make pjdfstest), installing with apt-get
// what it lacks (autoconf, automake, gcc, make, perl's prove, openssl,
// fusermount3). The daemon is a child process; every test runs in prove's
// children, never in the daemon. Each top-level group of the suite (chmod,
// open, …) runs as one `prove -r -v` in a directory of its own (the tests
// chmod and chown "."), -j groups at a time.
//
//	make conformance
//	go run ./integration/conformance [-bin bin/sandfs] [-j 3] [-only chmod,open] [-args '--no-passthrough'] [-keep]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
)

type config struct {
	bin, src, build, dir, logs string
	jobs                       int
	only                       map[string]bool
	args                       []string
	keep                       bool
	timeout                    time.Duration
}

func main() {
	var c config
	var only, args string
	flag.StringVar(&c.bin, "bin", "bin/sandfs", "the sandfs binary to mount with")
	flag.StringVar(&c.src, "src", "integration/testdata/pjdfstest", "the pjdfstest source")
	flag.StringVar(&c.build, "build", "bin/pjdfstest", "where pjdfstest is built (a copy of -src; removed first)")
	flag.StringVar(&c.dir, "dir", "", "the directory the fresh work directory is made in (default: $TMPDIR or /tmp)")
	flag.StringVar(&c.logs, "logs", "bin/conformance", "where each group's prove output and the daemon's log are kept")
	flag.IntVar(&c.jobs, "j", 3, "groups run at once")
	flag.StringVar(&only, "only", "", "comma-separated groups to run (default: all)")
	flag.StringVar(&args, "args", "", "more sandfs serve flags, space-separated (e.g. --no-passthrough)")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory")
	flag.DurationVar(&c.timeout, "timeout", 20*time.Minute, "longest a half may take")
	flag.Parse()
	if only != "" {
		c.only = map[string]bool{}
		for _, g := range strings.Split(only, ",") {
			c.only[strings.TrimSpace(g)] = true
		}
	}
	c.args = strings.Fields(args)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance:", err)
		if code == 0 {
			code = 2
		}
	}
	os.Exit(code)
}

func logf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "conformance: "+format+"\n", a...)
}

func run(ctx context.Context, c config) (int, error) {
	if os.Geteuid() != 0 {
		return 2, errors.New("pjdfstest must run as root")
	}
	for _, need := range [][2]string{
		{"autoreconf", "autoconf"}, {"automake", "automake"}, {"gcc", "gcc"}, {"make", "make"},
		{"prove", "perl"}, {"openssl", "openssl"}, {"fusermount3", "fuse3"},
	} {
		if err := needApt(need[0], need[1]); err != nil {
			return 2, err
		}
	}
	if _, err := os.Stat("/usr/include/stdio.h"); err != nil {
		if err := aptInstall("libc6-dev"); err != nil {
			return 2, err
		}
	}
	var err error
	for _, p := range []*string{&c.bin, &c.src, &c.build, &c.logs} {
		if *p, err = filepath.Abs(*p); err != nil {
			return 2, err
		}
	}
	if _, err := os.Stat(c.bin); err != nil {
		return 2, fmt.Errorf("%v (make build first)", err)
	}
	if err := os.MkdirAll(c.logs, 0o755); err != nil {
		return 2, err
	}
	// The logs of this run only: a group not run leaves no old log behind.
	old, _ := filepath.Glob(filepath.Join(c.logs, "*.log"))
	for _, p := range old {
		if err := os.Remove(p); err != nil {
			return 2, err
		}
	}
	t0 := time.Now()
	if err := buildPjdfstest(ctx, c); err != nil {
		return 2, err
	}
	logf("pjdfstest built in %s", time.Since(t0).Round(time.Second))
	groups, err := listGroups(filepath.Join(c.build, "tests"), c.only)
	if err != nil {
		return 2, err
	}

	syscall.Umask(0o022)
	work, err := os.MkdirTemp(c.dir, "sandfs-conformance-")
	if err != nil {
		return 2, err
	}
	// Ancestors must be searchable by everyone: the tests act as 65534 too.
	if err := os.Chmod(work, 0o755); err != nil {
		return 2, err
	}
	fsType := dfType(work)
	logf("work directory %s on %s", work, fsType)
	removeWork := !c.keep

	// The root half: the oracle.
	oracle := filepath.Join(work, "oracle")
	if err := os.Mkdir(oracle, 0o755); err != nil {
		return 2, err
	}
	t0 = time.Now()
	rootRes, err := runSuite(ctx, c, groups, oracle, "root")
	rootTime := time.Since(t0)
	if err != nil {
		return 2, fmt.Errorf("root half: %w", err)
	}
	logf("root half: %s", rootTime.Round(time.Second))

	// The mount half.
	t0 = time.Now()
	mntRes, mntErr := runMounted(ctx, c, groups, work)
	mntTime := time.Since(t0)
	if mntErr != nil {
		removeWork = false
		logf("mount half: %v", mntErr)
	} else {
		logf("mount half: %s", mntTime.Round(time.Second))
	}
	if removeWork {
		if mounted(filepath.Join(work, "mnt")) {
			logf("%s/mnt is still mounted: %s kept", work, work)
		} else if err := os.RemoveAll(work); err != nil {
			logf("remove %s: %v", work, err)
		}
	} else {
		logf("work directory kept: %s", work)
	}

	code := report(os.Stdout, fsType, rootRes, mntRes, rootTime, mntTime, c)
	if mntErr != nil {
		return 2, mntErr
	}
	return code, nil
}

// report prints both summaries and returns 1 when the mount fails a test
// that passes on the root.
func report(w io.Writer, fsType string, rootRes, mntRes map[string]*fileResult, rootTime, mntTime time.Duration, c config) int {
	rootFails := failures(rootRes)
	onRoot := map[failure]bool{}
	for _, f := range rootFails {
		onRoot[f] = true
	}
	// A file the root ran and the mount did not is the mount's failure.
	for name := range rootRes {
		if _, ok := mntRes[name]; !ok && mntRes != nil {
			fr := newFileResult()
			fr.planned = 0
			fr.failed[0] = "not run on the mount"
			mntRes[name] = fr
		}
	}
	var mine, both []failure
	for _, f := range failures(mntRes) {
		if onRoot[f] {
			both = append(both, f)
		} else {
			mine = append(mine, f)
		}
	}
	line := func(half string, res map[string]*fileResult, d time.Duration, fails []failure) {
		files, tests := 0, 0
		for _, fr := range res {
			files++
			tests += max(fr.planned, 0)
		}
		fmt.Fprintf(w, "%-6s %d files, %d tests, %d failed, %s\n", half+":", files, tests, len(fails), d.Round(time.Second))
	}
	fmt.Fprintf(w, "\n== pjdfstest as root, umask 022, on %s\n", fsType)
	line("root", rootRes, rootTime, rootFails)
	for _, l := range byFile(rootFails) {
		fmt.Fprintf(w, "  root fails %s\n", l)
	}
	mode := "sandfs serve --mount"
	if len(c.args) > 0 {
		mode += " " + strings.Join(c.args, " ")
	}
	if mntRes != nil {
		line("mount", mntRes, mntTime, append(append([]failure{}, mine...), both...))
		fmt.Fprintf(w, "  (%s; %d of its failures fail on the root too, counted as the root's)\n", mode, len(both))
		for _, l := range byFile(mine) {
			fmt.Fprintf(w, "  mount fails %s\n", l)
		}
		shown := 0
		for _, f := range mine {
			if shown == 20 {
				fmt.Fprintf(w, "  … %d more: see %s/mount-*.log\n", len(mine)-shown, c.logs)
				break
			}
			fmt.Fprintf(w, "    %s %s\n", f, shorten(mntRes[f.file].failed[f.n], 160))
			shown++
		}
		// Where the mount planned differently (pjdfstest picks tests by
		// filesystem type), numbers are compared as they are.
		var diff []string
		for name, fr := range rootRes {
			if m := mntRes[name]; m != nil && m.planned != fr.planned {
				diff = append(diff, fmt.Sprintf("%s (root %d, mount %d)", name, fr.planned, m.planned))
			}
		}
		sort.Strings(diff)
		if len(diff) > 0 {
			fmt.Fprintf(w, "  planned differently: %s\n", strings.Join(diff, ", "))
		}
	}
	tests := 0
	for _, fr := range mntRes {
		tests += max(fr.planned, 0)
	}
	fmt.Fprintf(w, "conformance: %d passed, %d failed, %d skipped\n", max(tests-len(mine)-len(both), 0), len(mine), len(both))
	if len(mine) > 0 || mntRes == nil {
		return 1
	}
	return 0
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n/2] + "…" + s[len(s)-n/2:]
}

// runMounted starts the daemon on a fresh root beside the oracle, mounted
// at a fresh mountpoint, runs the suite inside the mount, then unmounts and
// stops the daemon.
func runMounted(ctx context.Context, c config, groups []string, work string) (map[string]*fileResult, error) {
	root, mnt, state := filepath.Join(work, "sandbox"), filepath.Join(work, "mnt"), filepath.Join(work, "state")
	for _, d := range []struct {
		p    string
		mode fs.FileMode
	}{{root, 0o755}, {mnt, 0o755}, {state, 0o700}} {
		if err := os.Mkdir(d.p, d.mode); err != nil {
			return nil, err
		}
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(c.logs, "daemon.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	args := append([]string{"serve", "--root", root, "--mount", mnt, "--state", state, "--listen", addr}, c.args...)
	cmd := exec.Command(c.bin, args...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	logf("%s %s (log: %s)", c.bin, strings.Join(args, " "), logPath)
	stopped := false
	stopDaemon := func() error {
		if stopped {
			return nil
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		var err error
		select {
		case err = <-done:
			if err != nil {
				err = fmt.Errorf("sandfs serve exited with %v after SIGTERM (log: %s)", err, logPath)
			}
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
			err = fmt.Errorf("sandfs serve did not stop within 20s of SIGTERM (log: %s)", logPath)
		}
		if mounted(mnt) {
			out, uerr := exec.Command("fusermount3", "-u", "-z", mnt).CombinedOutput()
			if err == nil {
				err = fmt.Errorf("%s still mounted after the daemon stopped (fusermount3 -u -z: %v %s)", mnt, uerr, bytes.TrimSpace(out))
			}
		}
		return err
	}
	defer stopDaemon()

	deadline := time.Now().Add(30 * time.Second)
	for {
		if mounted(mnt) && healthy(addr) {
			break
		}
		select {
		case err := <-done:
			stopped = true
			return nil, fmt.Errorf("sandfs serve exited before the mount was up: %v (log: %s)", err, logPath)
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("%s not mounted within 30s (log: %s)", mnt, logPath)
		}
	}
	res, err := runSuite(ctx, c, groups, mnt, "mount")
	if serr := stopDaemon(); err == nil {
		err = serr
	}
	return res, err
}

func healthy(addr string) bool {
	cl := http.Client{Timeout: time.Second}
	resp, err := cl.Get("http://" + addr + "/health")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == 200
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// mounted reports whether mnt is a mount point.
func mounted(mnt string) bool {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == mnt {
			return true
		}
	}
	return false
}

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

// buildPjdfstest copies the source to c.build and builds pjdfstest there,
// so the vendored tree never holds a build product. The tests find the
// binary in the directory above them (tests/misc.sh).
func buildPjdfstest(ctx context.Context, c config) error {
	if err := os.RemoveAll(c.build); err != nil {
		return err
	}
	if err := copyTree(c.src, c.build); err != nil {
		return err
	}
	logPath := filepath.Join(c.logs, "build.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	for _, step := range [][]string{{"autoreconf", "-ifs"}, {"./configure"}, {"make", "pjdfstest"}} {
		cmd := exec.CommandContext(ctx, step[0], step[1:]...)
		cmd.Dir = c.build
		cmd.Stdout, cmd.Stderr = logFile, logFile
		if err := cmd.Run(); err != nil {
			b, _ := os.ReadFile(logPath)
			return fmt.Errorf("building pjdfstest: %s: %v\n%s", strings.Join(step, " "), err, tail(string(b), 20))
		}
	}
	return nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// copyTree copies the regular files and directories of src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(to, 0o755)
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(to, b, info.Mode().Perm()|0o600)
		default:
			return fmt.Errorf("copy %s: not a regular file or directory", p)
		}
	})
}

// dfType is the filesystem type of dir as df -T names it (ext4, tmpfs, …).
func dfType(dir string) string {
	out, err := exec.Command("df", "-PT", dir).Output()
	if err != nil {
		return "unknown filesystem"
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if f := strings.Fields(lines[len(lines)-1]); len(f) > 1 {
		return f[1]
	}
	return "unknown filesystem"
}

var aptOnce sync.Once

// needApt installs the Debian package pkg when cmd is missing.
func needApt(cmd, pkg string) error {
	if _, err := exec.LookPath(cmd); err == nil {
		return nil
	}
	return aptInstall(pkg)
}

func aptInstall(pkg string) error {
	logf("apt-get install %s", pkg)
	aptOnce.Do(func() { _ = exec.Command("apt-get", "update", "-q").Run() })
	cmd := exec.Command("apt-get", "install", "-y", "-q", "--no-install-recommends", pkg)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install %s: %v: %s", pkg, err, tail(string(out), 10))
	}
	return nil
}
