package core

import (
	"path"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
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

// nameMax is the longest name a Linux filesystem takes (NAME_MAX).
const nameMax = 255

// PathProblem is why a client path is refused, in words an answer may
// carry. Every check of a client path's shape is here (CheckPath), and
// Clean is built on it: no route or subpackage keeps its own copy.
type PathProblem string

const (
	PathOK          PathProblem = ""
	PathEmpty       PathProblem = "empty"
	PathNUL         PathProblem = "contains a NUL byte"
	PathTooLong     PathProblem = "longer than 4096 bytes"
	PathNameTooLong PathProblem = "has a name longer than 255 bytes"
	PathDotDot      PathProblem = `has a ".." component`
)

// CheckPath says what is wrong with the client path p as given (PathOK:
// nothing). strict refuses a ".." component too, for the callers whose
// paths must not climb (restore's scopes, an archive's member names);
// Clean resolves one lexically instead.
func CheckPath(p string, strict bool) PathProblem {
	switch {
	case p == "":
		return PathEmpty
	case strings.IndexByte(p, 0) >= 0:
		return PathNUL
	case len(p) >= unix.PathMax:
		return PathTooLong
	}
	for rest := p; rest != ""; {
		name, next, _ := strings.Cut(rest, "/")
		if len(name) > nameMax {
			// No such name can exist: refused here like the kernel would,
			// also where no system call follows (a watch wait).
			return PathNameTooLong
		}
		if strict && name == ".." {
			return PathDotDot
		}
		rest = next
	}
	return PathOK
}

func cleanAPI(workdir, p string) (string, error) {
	if why := CheckPath(p, false); why == PathEmpty || why == PathNUL {
		return "", PathErr("resolve", sanitize(p), unix.EINVAL)
	}
	if !strings.HasPrefix(p, "/") {
		p = workdir + "/" + p
	}
	p = path.Clean(p)
	if CheckPath(p, false) != PathOK {
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
