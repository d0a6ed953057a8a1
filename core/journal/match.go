package journal

import (
	"path"
	"strings"
)

// DefaultExcludes are the names a watcher skips unless it gives its own list.
var DefaultExcludes = []string{".git", "node_modules", "__pycache__", ".venv", ".DS_Store", "*.pyc", "*.pyo", "*.swp", "*.swo"}

// within reports whether API path p is dir or lies under it.
func within(p, dir string) bool {
	if dir == "/" || p == dir {
		return true
	}
	return strings.HasPrefix(p, dir+"/")
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

// Excluded reports whether a path relative to a watched directory is
// excluded by patterns: a pattern without "/" matches any one component
// (".git" excludes everything under a .git directory), one with "/" matches
// the relative path or a prefix of it.
func Excluded(rel string, patterns []string) bool {
	if rel == "" {
		return false
	}
	for _, pat := range patterns {
		if pat == "" {
			continue
		}
		if strings.Contains(pat, "/") {
			pat = strings.Trim(pat, "/")
			for p := rel; p != "." && p != ""; p = path.Dir(p) {
				if ok, _ := path.Match(pat, p); ok {
					return true
				}
			}
			continue
		}
		for _, c := range strings.Split(rel, "/") {
			if ok, _ := path.Match(pat, c); ok {
				return true
			}
		}
	}
	return false
}

// Included reports whether a relative path passes include patterns: none
// means everything; otherwise the base name or the whole relative path
// must match one ("**/" prefixes match at any depth).
func Included(rel string, patterns []string) bool {
	if len(patterns) == 0 {
		return true
	}
	base := path.Base(rel)
	for _, pat := range patterns {
		for _, cand := range []string{base, rel} {
			if ok, _ := path.Match(pat, cand); ok {
				return true
			}
		}
		if rest, ok := strings.CutPrefix(pat, "**/"); ok {
			if m, _ := path.Match(rest, base); m {
				return true
			}
		}
	}
	return false
}
