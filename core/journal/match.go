package journal

import (
	"strings"

	"sandfs/core/pathmatch"
)

// DefaultExcludes are the names a watcher skips unless it gives its own
// list: pathmatch's, the one list grep skips too.
var DefaultExcludes = pathmatch.DefaultExcludes

// within reports whether API path p is dir or lies under it.
func within(p, dir string) bool {
	if dir == "/" || p == dir {
		return true
	}
	return strings.HasPrefix(p, dir+"/")
}

// Covers reports whether API path p is dir, or lies beneath it: anywhere
// with recursive, else as one of its direct entries. It is the scope of a
// live watch of a directory, as the streams that follow one cut it.
func Covers(p, dir string, recursive bool) bool {
	if p == "" || !within(p, dir) {
		return false
	}
	return recursive || !strings.Contains(Rel(p, dir), "/")
}

// Rel is p relative to the directory dir ("" for dir itself). p must be
// within dir.
func Rel(p, dir string) string {
	if p == dir {
		return ""
	}
	if dir == "/" {
		return p[1:]
	}
	return strings.TrimPrefix(p, dir+"/")
}
