package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"
)

// measureBuild builds each hello program under hello/ from a cold build
// cache (GOCACHE in a fresh temp dir; the module cache stays warm), plain
// with CGO_ENABLED=0 (a static binary) and with -race, and prints the
// binary size and the times, each also as added to the baseline "none".
func measureBuild() error {
	progs, err := dirsUnder("hello")
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "storecmp-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	type row struct {
		size        int64
		plain, race time.Duration
	}
	rows := map[string]row{}
	for _, p := range progs {
		name := filepath.Base(p)
		var r row
		out := filepath.Join(tmp, name)
		if r.plain, err = goBuild(tmp, "0", "-o", out, "./"+p); err != nil {
			return err
		}
		fi, err := os.Stat(out)
		if err != nil {
			return err
		}
		r.size = fi.Size()
		if r.race, err = goBuild(tmp, "1", "-race", "-o", out+".race", "./"+p); err != nil {
			return err
		}
		rows[name] = r
		fmt.Fprintf(os.Stderr, "%s: %d bytes, build %v, race %v\n", name, r.size, r.plain, r.race)
	}
	base := rows["none"]
	fmt.Println("| import | binary (CGO_ENABLED=0) | added | cold `go build` | added | cold `go build -race` | added |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, name := range []string{"none", "sqlite", "bbolt", "pebble"} {
		r, ok := rows[name]
		if !ok {
			continue
		}
		fmt.Printf("| %s | %.1f MB | +%.1f MB | %.0f s | +%.0f s | %.0f s | +%.0f s |\n", name,
			mb(r.size), mb(r.size-base.size), r.plain.Seconds(), (r.plain - base.plain).Seconds(),
			r.race.Seconds(), (r.race - base.race).Seconds())
	}
	return nil
}

func mb(n int64) float64 { return float64(n) / 1e6 }

func goBuild(tmp, cgo string, args ...string) (time.Duration, error) {
	cache, err := os.MkdirTemp(tmp, "gocache-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(cache)
	cmd := exec.Command("go", append([]string{"build"}, args...)...)
	cmd.Env = append(os.Environ(), "GOCACHE="+cache, "CGO_ENABLED="+cgo)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	t := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, fmt.Errorf("go build %v: %w", args, err)
	}
	return time.Since(t), nil
}
