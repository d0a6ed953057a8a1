package main

// Building pjdfstest from the vendored source, and the tools it needs
// (installed with apt-get when missing).

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
)

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
