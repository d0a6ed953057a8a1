package main

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"sandfs/core"
)

// quotaFlags is serve's repeatable --quota [NAME=]SIZE[,ENTRIES]: the
// quota of a sandbox the daemon serves from its flags (--root's "default"
// when NAME is left out, a --sandbox NAME otherwise). SIZE takes the K,
// M, G and T of the other size flags; ENTRIES is a whole number; 0, or a
// part left out, is no bound. A later flag for the same name wins. The
// bound is enforced by core (core/quota); sandboxes made live (the
// registry) keep theirs elsewhere.
type quotaFlags map[string]core.Quota

func (q *quotaFlags) String() string {
	if q == nil || len(*q) == 0 {
		return ""
	}
	names := make([]string, 0, len(*q))
	for n := range *q {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		v := (*q)[n]
		parts[i] = fmt.Sprintf("%s=%s,%d", n, formatSize(v.Bytes), v.Entries)
	}
	return strings.Join(parts, " ")
}

func (q *quotaFlags) Set(v string) error {
	name, spec := core.DefaultSandbox, v
	if i := strings.IndexByte(v, '='); i >= 0 {
		name, spec = v[:i], v[i+1:]
		if name == "" || strings.ContainsAny(name, "/\x00") {
			return fmt.Errorf("--quota %q: want NAME without slashes, as --sandbox", v)
		}
	}
	quota, err := parseQuota(spec)
	if err != nil {
		return fmt.Errorf("--quota %q: %v", v, err)
	}
	if *q == nil {
		*q = quotaFlags{}
	}
	(*q)[name] = quota
	return nil
}

// parseQuota reads SIZE[,ENTRIES].
func parseQuota(spec string) (core.Quota, error) {
	var quota core.Quota
	sz, ents, hasEnts := strings.Cut(spec, ",")
	if strings.TrimSpace(sz) == "" {
		return quota, fmt.Errorf("want SIZE[,ENTRIES]")
	}
	n, err := parseSize(sz)
	if err != nil {
		return quota, err
	}
	quota.Bytes = n
	if hasEnts {
		e, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(ents), "_", ""), 10, 64)
		if err != nil || e < 0 {
			return quota, fmt.Errorf("not a count of entries: %q", ents)
		}
		quota.Entries = e
	}
	return quota, nil
}

// check refuses a --quota for a name no fixed sandbox has (a sandbox of
// --sandboxes DIR keeps its quota in its quota.json, or takes
// --default-quota).
func (q quotaFlags) check(dirs []namedDir) error {
	names := make([]string, 0, len(q))
	for n := range q {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if slices.ContainsFunc(dirs, func(d namedDir) bool { return d.name == n }) {
			continue
		}
		return usagef("--quota %s=…: no sandbox %s is given by --root or --sandbox (a sandbox of --sandboxes takes --default-quota, or PATCH /v1/sandboxes/%s)", n, n, n)
	}
	return nil
}

// of is the quota of sandbox name (zero: none).
func (q quotaFlags) of(name string) core.Quota { return q[name] }
