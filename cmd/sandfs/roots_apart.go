package main

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Roots apart: a sandbox token opens its own sandbox only (rest/auth.go),
// so no sandbox's tree may hold another's. A fixed root inside another
// (or inside --sandboxes DIR, or DIR inside a root) would give the outer
// sandbox's token the inner one's files, and serve them twice. serve
// refuses it at start, on the paths with their symlinks resolved.

// hostWithin reports whether a is b or lies beneath it: both are resolved,
// absolute paths (resolveExisting), compared as strings and then by
// identity: the device and inode of b against those of each existing
// directory from a up to /, which a bind mount or a second path to the
// same directory cannot hide.
func hostWithin(a, b string) bool {
	if a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") {
		return true
	}
	var bst unix.Stat_t
	if unix.Stat(b, &bst) != nil {
		return false // not made yet: nothing is under it
	}
	for p := a; ; p = filepath.Dir(p) {
		var st unix.Stat_t
		if unix.Stat(p, &st) == nil && st.Dev == bst.Dev && st.Ino == bst.Ino {
			return true
		}
		if p == filepath.Dir(p) {
			return false
		}
	}
}

// checkRootsApart refuses roots (the fixed sandboxes, then DIR, then
// --mount-all MNTDIR, whose mounts are the sandboxes' trees, then each
// --mount point) of which one holds another: a mount inside a served
// tree would have the daemon walk, watch and serve its own mount, and
// wait on itself. dirsDir and mountAll are "" when not given.
func checkRootsApart(dirs []namedDir, dirsDir, mountAll string, mounts ...string) error {
	type root struct{ what, path string }
	var roots []root
	add := func(what, p string) error {
		if p == "" {
			return nil
		}
		r, err := resolveExisting(p)
		if errors.Is(err, unix.ENOTCONN) || errors.Is(err, unix.ECONNABORTED) {
			// A mount left by a daemon that died (the mirror clears it
			// when it mounts): taken as its path says.
			r, err = filepath.Abs(p)
		}
		if err == nil {
			roots = append(roots, root{what, r})
		}
		return err
	}
	for _, d := range dirs {
		if err := add("the root of sandbox "+d.name+" ("+d.dir+")", d.dir); err != nil {
			return err
		}
	}
	if err := errors.Join(add("--sandboxes "+dirsDir, dirsDir), add("--mount-all "+mountAll, mountAll)); err != nil {
		return err
	}
	for _, spec := range mounts {
		mnt := spec
		if n, m, ok := strings.Cut(spec, "="); ok && slices.ContainsFunc(dirs, func(d namedDir) bool { return d.name == n }) {
			mnt = m
		}
		if err := add("--mount "+spec, mnt); err != nil {
			return err
		}
	}
	var errs []error
	for i := range roots {
		for j := i + 1; j < len(roots); j++ {
			a, b := roots[i], roots[j]
			if hostWithin(b.path, a.path) {
				a, b = b, a
			}
			if hostWithin(a.path, b.path) {
				errs = append(errs, usagef("%s is inside %s: one sandbox's tree would hold another's (and its token open it); give them apart", a.what, b.what))
			}
		}
	}
	return errors.Join(errs...)
}
