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
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
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
