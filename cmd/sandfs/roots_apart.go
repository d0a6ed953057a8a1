package main

import (
	"errors"
	"strings"
)

// Roots apart: a sandbox token opens its own sandbox only (rest/auth.go),
// so no sandbox's tree may hold another's. A fixed root inside another
// (or inside --sandboxes DIR, or DIR inside a root) would give the outer
// sandbox's token the inner one's files, and serve them twice. serve
// refuses it at start, on the paths with their symlinks resolved.

// within reports whether a is b or lies beneath it (both resolved).
func within(a, b string) bool { return a == b || strings.HasPrefix(a, strings.TrimSuffix(b, "/")+"/") }

// checkRootsApart refuses roots (the fixed sandboxes, then DIR, then
// --mount-all MNTDIR, whose mounts are the sandboxes' trees) of which one
// holds another. dirsDir and mountAll are "" when not given.
func checkRootsApart(dirs []namedDir, dirsDir, mountAll string) error {
	type root struct{ what, path string }
	var roots []root
	add := func(what, p string) error {
		if p == "" {
			return nil
		}
		r, err := resolveExisting(p)
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
	var errs []error
	for i := range roots {
		for j := i + 1; j < len(roots); j++ {
			a, b := roots[i], roots[j]
			if within(b.path, a.path) {
				a, b = b, a
			}
			if within(a.path, b.path) {
				errs = append(errs, usagef("%s is inside %s: one sandbox's tree would hold another's (and its token open it); give them apart", a.what, b.what))
			}
		}
	}
	return errors.Join(errs...)
}
