package main

import (
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// libfuse's example daemons, the workload rows' C anchors: built on this
// machine against the libfuse it has (libfuse3-dev), cached in c.cache.

// needPassthroughLL builds libfuse's passthrough_ll example from the
// sources Debian's libfuse3-dev ships (installing it and pkg-config when
// missing) into c.cache.
func needPassthroughLL(c *cfg) error {
	bin := filepath.Join(c.cache, "passthrough_ll")
	if _, err := os.Stat(bin); err == nil {
		return nil
	}
	if err := needLibfuseDev(); err != nil {
		return err
	}
	ex := "/usr/share/doc/libfuse3-dev/examples"
	src := filepath.Join(c.cache, "passthrough_ll-src")
	os.MkdirAll(src, 0o755)
	for _, f := range []string{"passthrough_ll.c", "passthrough_helpers.h"} {
		if err := copyMaybeGz(filepath.Join(ex, f), filepath.Join(src, f)); err != nil {
			return err
		}
	}
	flags, err := fuseFlags()
	if err != nil {
		return err
	}
	args := append([]string{"-Wall", "-O2", "-o", bin, filepath.Join(src, "passthrough_ll.c")}, flags...)
	if out, err := exec.Command("cc", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("cc passthrough_ll: %v: %s", err, out)
	}
	return nil
}

// copyMaybeGz copies p, or p.gz uncompressed, to dst.
func copyMaybeGz(p, dst string) error {
	var r io.Reader
	f, err := os.Open(p)
	if err != nil {
		if f, err = os.Open(p + ".gz"); err != nil {
			return err
		}
		defer f.Close()
		z, err := gzip.NewReader(f)
		if err != nil {
			return err
		}
		r = z
	} else {
		defer f.Close()
		r = f
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// startPassthroughLL mounts libfuse's passthrough_ll of root at mnt, in
// the foreground (so the harness holds its pid), shared with the kernel
// checking permissions as sandfs mounts, its defaults otherwise.
func startPassthroughLL(c *cfg, root, mnt string) (*proc, error) {
	os.MkdirAll(mnt, 0o755)
	if isMount(mnt) {
		exec.Command("fusermount3", "-u", mnt).Run()
	}
	return mounted(mnt)(startProc("", "", "", filepath.Join(c.cache, "passthrough_ll"),
		"-f", "-o", "allow_other,default_permissions,source="+root, mnt))
}

// fuseVersion is the libfuse version pkg-config reports.
func fuseVersion() string {
	b, err := exec.Command("pkg-config", "--modversion", "fuse3").Output()
	if err != nil {
		return "3"
	}
	return strings.TrimSpace(string(b))
}

// needLibfuseDev installs libfuse3-dev (headers, pkg-config's fuse3.pc and
// the C examples) and pkg-config when missing.
func needLibfuseDev() error {
	if err := needApt("pkg-config", "pkg-config"); err != nil {
		return err
	}
	if _, err := os.Stat("/usr/share/doc/libfuse3-dev/examples"); err == nil {
		return nil
	}
	aptOnce.Do(func() { exec.Command("apt-get", "update", "-q").Run() })
	if out, err := exec.Command("apt-get", "install", "-y", "-q", "libfuse3-dev").CombinedOutput(); err != nil {
		return fmt.Errorf("apt-get install libfuse3-dev: %v: %s", err, tail(string(out)))
	}
	return nil
}

// fuseFlags are the compiler and linker flags of libfuse3.
func fuseFlags() ([]string, error) {
	flags, err := exec.Command("pkg-config", "--cflags", "--libs", "fuse3").Output()
	if err != nil {
		return nil, fmt.Errorf("pkg-config fuse3: %v", err)
	}
	return strings.Fields(string(flags)), nil
}

// hpVersion is the libfuse release bench/anchors/passthrough_hp comes
// from.
const hpVersion = "3.16.2"

// hpDefines are what libfuse's own build (meson's fuse_config.h) defines
// for the example on glibc: without HAVE_UTIMENSAT its SETATTR of times
// fails with EOPNOTSUPP (tar -x stops on it), without the others it has no
// fallocate and no xattrs.
var hpDefines = []string{"-DHAVE_UTIMENSAT", "-DHAVE_POSIX_FALLOCATE", "-DHAVE_SETXATTR"}

// needPassthroughHP builds libfuse's passthrough_hp example, kept in
// bench/anchors/passthrough_hp (Debian ships no C++ example), with g++
// (installed when missing) against the machine's libfuse3, into c.cache,
// named after a hash of the source and the command line so a change of
// either is rebuilt.
func needPassthroughHP(c *cfg) error {
	src := filepath.Join(c.repo, "bench", "anchors", "passthrough_hp", "passthrough_hp.cc")
	code, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	args := append([]string{"-std=c++17", "-Wall", "-O2", "-pthread"}, hpDefines...)
	h := sha256.Sum256([]byte(strings.Join(args, " ") + "\n" + string(code)))
	c.hpBin = filepath.Join(c.cache, fmt.Sprintf("passthrough_hp-%s-%x", hpVersion, h[:4]))
	if _, err := os.Stat(c.hpBin); err == nil {
		return nil
	}
	if err := needLibfuseDev(); err != nil {
		return err
	}
	if err := needApt("g++", "g++"); err != nil {
		return err
	}
	flags, err := fuseFlags()
	if err != nil {
		return err
	}
	logf("building passthrough_hp %s", hpVersion)
	os.MkdirAll(c.cache, 0o755)
	args = append(append(args, "-o", c.hpBin+".tmp", src), flags...)
	if out, err := exec.Command("g++", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("g++ passthrough_hp: %v: %s", err, tail(string(out)))
	}
	return os.Rename(c.hpBin+".tmp", c.hpBin)
}

// startPassthroughHP mounts libfuse's passthrough_hp of root at mnt in the
// foreground, shared (allow_other; it adds default_permissions itself) as
// sandfs mounts, its defaults otherwise: a day's entry and attribute
// timeouts (it assumes the root changes only through the mount, which
// holds in the workload), writeback cache, flock, splice, libfuse's
// multithreaded loop.
func startPassthroughHP(c *cfg, root, mnt string) (*proc, error) {
	os.MkdirAll(mnt, 0o755)
	if isMount(mnt) {
		exec.Command("fusermount3", "-u", mnt).Run()
	}
	return mounted(mnt)(startProc("", "", "", c.hpBin, "--foreground", "-o", "allow_other", root, mnt))
}
