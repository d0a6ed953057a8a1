package main

import (
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
)

// Each sandbox holds one inotify instance (its kernel watch), and the
// kernel bounds the instances of one user (fs.inotify.max_user_instances,
// 128 by default, shared with every other program of that user). A host
// of many sandboxes needs more: --inotify-instances N raises the bound to
// N at start when it is lower (root only), and says so in the log.

// maxUserInstances is the kernel's knob.
const maxUserInstances = "/proc/sys/fs/inotify/max_user_instances"

// raiseInotifyInstances raises the bound in file (maxUserInstances) to at
// least n; n = 0 leaves it. It reports the bound in force after.
func raiseInotifyInstances(file string, n int, log *slog.Logger) (int, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, fmt.Errorf("--inotify-instances: %w", err)
	}
	cur, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("--inotify-instances: %s: %w", file, err)
	}
	if n <= cur {
		return cur, nil
	}
	if err := os.WriteFile(file, []byte(strconv.Itoa(n)+"\n"), 0o644); err != nil {
		return cur, fmt.Errorf("--inotify-instances %d: cannot raise %s from %d (root only): %w", n, file, cur, err)
	}
	log.Info("raised the kernel's bound on inotify instances per user", "from", cur, "to", n, "file", file)
	return n, nil
}
