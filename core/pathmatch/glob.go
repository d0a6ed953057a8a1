package pathmatch

import (
	"errors"
	"path"
	"strings"
)

// ErrBadGlob is a glob with no segment, or with a segment path.Match
// refuses.
var ErrBadGlob = errors.New("malformed glob")

// Glob is a compiled segment glob over slash-separated relative paths:
// each segment is a path.Match pattern ("*", "?", "[...]", never crossing
// a "/"), and a segment "**" matches zero or more whole components. A
// leading "./" is dropped.
type Glob struct {
	segs []string
	deep bool // holds a "**"
}

// Compile compiles a glob; one with no segment or a malformed segment is
// ErrBadGlob.
func Compile(pattern string) (*Glob, error) {
	p := strings.TrimPrefix(pattern, "./")
	p = strings.Trim(p, "/")
	if p == "" {
		return nil, ErrBadGlob
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
			return nil, ErrBadGlob
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
	return matchSegs(g.segs, strings.Split(rel, "/"))
}

// matchSegs matches the segments pat against the components comps in
// O(len(pat)×len(comps)) path.Match calls: reach[j] says whether the
// segments so far match comps[:j], and a "**" carries every reached j on to
// all later ones. (Trying each split of each "**" in turn is exponential
// in their number: "**/a/**/a/…/b" against a deep path of "a"s.)
func matchSegs(pat, comps []string) bool {
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
