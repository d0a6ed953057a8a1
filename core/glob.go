package core

import (
	"golang.org/x/sys/unix"

	"sandfs/core/pathmatch"
)

// Glob is a compiled segment glob over slash-separated relative paths
// (pathmatch.Glob): "**" matches zero or more whole components.
type Glob = pathmatch.Glob

// CompileGlob checks a client's glob (pattern.go's bounds) and compiles
// it; a malformed one is EINVAL.
func CompileGlob(pattern string) (*Glob, error) {
	if err := CheckGlob(pattern); err != nil {
		return nil, err
	}
	g, err := pathmatch.Compile(pattern)
	if err != nil {
		return nil, PathErr("glob", sanitize(pattern), unix.EINVAL)
	}
	return g, nil
}

// MatchGlob compiles pattern and matches rel; a malformed pattern matches
// nothing.
func MatchGlob(pattern, rel string) bool {
	g, err := CompileGlob(pattern)
	return err == nil && g.Match(rel)
}
