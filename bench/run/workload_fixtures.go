package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// The workload rows' fixtures: made once under c.work and kept.

// wlGoDirs are the directories of GOROOT/src in the tree fixture.
var wlGoDirs = []string{"crypto", "go", "net", "math", "os", "image", "encoding", "archive", "compress"}

// wlNpmPkgs are installed once into the node_modules fixture; wlRequire
// are loaded from it by node.
var (
	wlNpmPkgs = []string{"express@4", "lodash@4", "react@18", "react-dom@18", "axios@1", "moment@2", "chalk@4", "commander@12"}
	wlRequire = []string{"express", "react-dom", "lodash"}
)

func fileMB(p string) int64 {
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return (fi.Size() + 500_000) / 1_000_000
}

// wlGoTar is the tree fixture: a tar of wlGoDirs of GOROOT/src, made once
// under c.work and kept (its name has the Go version).
func wlGoTar(c *cfg) (string, int, error) {
	dir := filepath.Join(c.work, "workload")
	os.MkdirAll(dir, 0o755)
	p := filepath.Join(dir, "gosrc-"+runtime.Version()+".tar")
	if _, err := os.Stat(p); err != nil {
		logf("making %s", p)
		args := []string{"-C", runtime.GOROOT(), "-cf", p + ".tmp"}
		for _, d := range wlGoDirs {
			args = append(args, filepath.Join("src", d))
		}
		if out, err := exec.Command("tar", args...).CombinedOutput(); err != nil {
			return "", 0, fmt.Errorf("tar: %v: %s", err, out)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			return "", 0, err
		}
	}
	n, err := tarFiles(p)
	if err == nil && n < 3000 {
		err = fmt.Errorf("%s: %d files, fewer than 3,000", p, n)
	}
	return p, n, err
}

// wlNpmTar is the node_modules fixture: npm install of wlNpmPkgs (no
// scripts, no lock) made once under c.work and kept as a tar.
func wlNpmTar(c *cfg) (string, int, error) {
	dir := filepath.Join(c.work, "workload")
	p := filepath.Join(dir, "node_modules.tar")
	if _, err := os.Stat(p); err != nil {
		tmp := filepath.Join(dir, "npm.tmp")
		os.RemoveAll(tmp)
		os.MkdirAll(tmp, 0o755)
		defer os.RemoveAll(tmp)
		if err := os.WriteFile(filepath.Join(tmp, "package.json"), []byte(`{"name":"sandfs-bench-fixture","private":true}`+"\n"), 0o644); err != nil {
			return "", 0, err
		}
		logf("npm install %s for the node_modules fixture", strings.Join(wlNpmPkgs, " "))
		cmd := exec.Command("npm", append([]string{"install", "--no-audit", "--no-fund", "--ignore-scripts", "--no-package-lock"}, wlNpmPkgs...)...)
		cmd.Dir = tmp
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", 0, fmt.Errorf("npm install: %v: %s", err, tail(string(out)))
		}
		if out, err := exec.Command("tar", "-C", tmp, "-cf", p+".tmp", "node_modules").CombinedOutput(); err != nil {
			return "", 0, fmt.Errorf("tar: %v: %s", err, out)
		}
		if err := os.Rename(p+".tmp", p); err != nil {
			return "", 0, err
		}
	}
	n, err := tarFiles(p)
	return p, n, err
}

// tarFiles counts the entries of the tar at p that are not directories.
func tarFiles(p string) (int, error) {
	out, err := exec.Command("tar", "-tf", p).Output()
	if err != nil {
		return 0, fmt.Errorf("tar -tf %s: %v", p, err)
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if l != "" && !strings.HasSuffix(l, "/") {
			n++
		}
	}
	return n, nil
}
