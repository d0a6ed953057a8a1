package core

import (
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/core/apipath"
)

// Clean turns a client path into a canonical absolute API path. A relative
// path is joined to the sandbox working directory; ".." at the root stays at
// the root. An empty path or one with a NUL byte is EINVAL.
func (s *Sandbox) Clean(p string) (string, error) {
	return cleanAPI(s.workdir, p)
}

// CleanIn is Clean with an explicit working directory (an API path), for
// families whose requests carry their own (the named-sandbox workingDir).
func (s *Sandbox) CleanIn(workdir, p string) (string, error) {
	if workdir == "" {
		workdir = s.workdir
	}
	wd, err := cleanAPI("/", workdir)
	if err != nil {
		return "", err
	}
	return cleanAPI(wd, p)
}

func cleanAPI(workdir, p string) (string, error) {
	if why := apipath.Check(p, false); why == apipath.Empty || why == apipath.NUL {
		return "", PathErr("resolve", sanitize(p), unix.EINVAL)
	}
	if !strings.HasPrefix(p, "/") {
		p = workdir + "/" + p
	}
	p = path.Clean(p)
	if apipath.Check(p, false) != apipath.OK {
		return "", PathErr("resolve", p[:min(len(p), 64)]+"…", unix.ENAMETOOLONG)
	}
	return p, nil
}

// sanitize makes a bad client path printable in an error.
func sanitize(p string) string {
	return strings.ReplaceAll(p, "\x00", `\x00`)
}

// rel turns a clean API path into the path relative to the root fd that the
// *at syscalls take: "/" is ".", "/a/b" is "a/b".
func rel(apiPath string) string {
	if apiPath == "/" {
		return "."
	}
	return apiPath[1:]
}

// quote prints a client-supplied name safely inside a message.
func quote(s string) string { return strconv.Quote(s) }

// cleanBoth is Clean of the two API paths of a two-path operation (move,
// copy, link, rename).
func (s *Sandbox) cleanBoth(a, b string) (string, string, error) {
	ca, err := s.Clean(a)
	if err != nil {
		return "", "", err
	}
	cb, err := s.Clean(b)
	return ca, cb, err
}
