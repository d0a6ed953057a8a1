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
	if err := CheckGlob(pattern); err != nil {
		return nil, err
	}
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

// globSegs matches the segments pat against the components comps in
// O(len(pat)×len(comps)) path.Match calls: reach[j] says whether the
// segments so far match comps[:j], and a "**" carries every reached j on to
// all later ones. (Trying each split of each "**" in turn is exponential
// in their number: "**/a/**/a/…/b" against a deep path of "a"s.)
func globSegs(pat, comps []string) bool {
	reach := make([]bool, len(comps)+1)
	next := make([]bool, len(comps)+1)
	reach[0] = true
	for _, seg := range pat {
		clear(next)
		if seg == "**" {
			on := false
			for j := range reach {
				on = on || reach[j]
				next[j] = on
			}
		} else {
			for j, c := range comps {
				if reach[j] {
					if ok, _ := path.Match(seg, c); ok {
						next[j+1] = true
					}
				}
			}
		}
		reach, next = next, reach
	}
	return reach[len(comps)]
}
