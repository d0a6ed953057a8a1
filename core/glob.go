package core

import (
	"path"
	"strings"

	"golang.org/x/sys/unix"
)

// Glob is a compiled glob over slash-separated relative paths: each segment
// is a path.Match pattern ("*", "?", "[...]", never crossing a "/"), and a
// segment "**" matches zero or more whole components. A leading "./" is
// dropped.
type Glob struct {
	segs []string
	deep bool // holds a "**"
}

// CompileGlob checks a glob and compiles it; a malformed one is EINVAL.
func CompileGlob(pattern string) (*Glob, error) {
	p := strings.TrimPrefix(pattern, "./")
	p = strings.Trim(p, "/")
	if p == "" {
		return nil, pathErr("glob", sanitize(pattern), unix.EINVAL)
	}
	g := &Glob{}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" {
			continue
		}
		if seg == "**" {
			if n := len(g.segs); n > 0 && g.segs[n-1] == "**" {
				continue // "**/**" is "**"
			}
			g.deep = true
		} else if _, err := path.Match(seg, ""); err != nil {
			return nil, pathErr("glob", sanitize(pattern), unix.EINVAL)
		}
		g.segs = append(g.segs, seg)
	}
	return g, nil
}

// MaxDepth is the deepest relative path (in components) the glob can match,
// or 0 for any depth.
func (g *Glob) MaxDepth() int {
	if g.deep {
		return 0
	}
	return len(g.segs)
}

// Match reports whether the relative path rel ("a/b/c.go") matches.
func (g *Glob) Match(rel string) bool {
	return globSegs(g.segs, strings.Split(rel, "/"))
}

// MatchGlob compiles pattern and matches rel; a malformed pattern matches
// nothing.
func MatchGlob(pattern, rel string) bool {
	g, err := CompileGlob(pattern)
	return err == nil && g.Match(rel)
}

func globSegs(pat, comps []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			rest := pat[1:]
			if len(rest) == 0 {
				return true
			}
			for i := 0; i <= len(comps); i++ {
				if globSegs(rest, comps[i:]) {
					return true
				}
			}
			return false
		}
		if len(comps) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], comps[0]); !ok {
			return false
		}
		pat, comps = pat[1:], comps[1:]
	}
	return len(comps) == 0
}
