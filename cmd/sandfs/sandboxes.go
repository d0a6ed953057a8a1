package main

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"

	"sandfs/core"
	"sandfs/internal/statedir"
)

type namedDir struct{ name, dir string }

// sandboxDirs lists the sandboxes to serve: "default" from --root first,
// then each --sandbox NAME=DIR. Directories are made absolute for the logs.
func sandboxDirs(root string, extra []string) ([]namedDir, error) {
	abs := func(d string) (string, error) {
		a, err := filepath.Abs(d)
		if err != nil {
			return "", fmt.Errorf("%s: %w", d, err)
		}
		return a, nil
	}
	r, err := abs(root)
	if err != nil {
		return nil, err
	}
	dirs := []namedDir{{core.DefaultSandbox, r}}
	seen := map[string]bool{core.DefaultSandbox: true}
	for _, s := range extra {
		name, dir, ok := strings.Cut(s, "=")
		if !ok || name == "" || dir == "" || strings.ContainsAny(name, "/\x00") {
			return nil, usagef("--sandbox %q: want NAME=DIR (NAME without slashes)", s)
		}
		if seen[name] {
			if name == core.DefaultSandbox {
				return nil, usagef("--sandbox %q: the sandbox \"default\" is --root", s)
			}
			return nil, usagef("--sandbox %q: sandbox %s given twice", s, name)
		}
		seen[name] = true
		d, err := abs(dir)
		if err != nil {
			return nil, err
		}
		dirs = append(dirs, namedDir{name, d})
	}
	return dirs, nil
}

// sandboxesState is the daemon's state directory where the sandboxes keep
// their journals, tokens and quotas ("" = none is needed: --no-history,
// --no-auth and no --sandboxes). It is checked as the token's is, once:
// the one auth opened for the daemon's token is taken as it is.
func sandboxesState(cfg serveConfig, auth daemonAuth, noToken bool, getenv func(string) string, roots []string, log *slog.Logger) (string, error) {
	if cfg.history.off && noToken && cfg.sandboxesDir == "" {
		return "", nil
	}
	if auth.state != "" {
		return auth.state, nil
	}
	explain := func(err error) error {
		if !cfg.history.off {
			return errHistoryState(err)
		}
		return fmt.Errorf("%w (each sandbox's token and quota live in the state directory; give --state DIR)", err)
	}
	state, err := statedir.Default(cfg.auth.state, getenv)
	if err != nil {
		return "", explain(err)
	}
	sd, tightened, err := openStateDir(state, roots)
	if err != nil {
		return "", explain(err)
	}
	sd.Close()
	if tightened {
		log.Warn("the state directory was open to other users; made it 0700", "state", state)
	}
	return state, nil
}

// quotaFlag is one quota: SIZE[,ENTRIES] (parseQuota, quota_flags.go).
type quotaFlag core.Quota

func (q *quotaFlag) String() string {
	if q.Entries == 0 {
		return formatSize(q.Bytes)
	}
	return formatSize(q.Bytes) + "," + strconv.FormatInt(q.Entries, 10)
}

func (q *quotaFlag) Set(v string) error {
	p, err := parseQuota(v)
	if err != nil {
		return err
	}
	*q = quotaFlag(p)
	return nil
}
