package pathmatch

import (
	"path"
	"strings"
)

// DefaultExcludes are the names skipped unless a client gives its own list.
var DefaultExcludes = []string{".git", "node_modules", "__pycache__", ".venv", ".DS_Store", "*.pyc", "*.pyo", "*.swp", "*.swo"}

// InAnyComponent reports whether one of patterns matches rel: a pattern
// without "/" matches any one component, one with "/" (outer slashes
// trimmed) matches rel or one of its ancestors. An empty rel (the
// directory itself) and an empty pattern match nothing.
func InAnyComponent(rel string, patterns []string) bool {
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

// BaseOrPath reports whether one of patterns matches rel, each by its
// form: a leading "./" and any leading "**/" are dropped, then a pattern
// without "/" matches rel's base name and one with "/" (outer slashes
// trimmed) matches the whole of rel. An empty pattern matches nothing.
func BaseOrPath(rel string, patterns []string) bool {
	base := path.Base(rel)
	for _, pat := range patterns {
		if pat == "" {
			continue
		}
		pat = strings.TrimPrefix(pat, "./")
		for strings.HasPrefix(pat, "**/") {
			pat = pat[3:]
		}
		cand := base
		if strings.Contains(pat, "/") {
			pat, cand = strings.Trim(pat, "/"), rel
		}
		if ok, _ := path.Match(pat, cand); ok {
			return true
		}
	}
	return false
}

// BaseOrPathLoose reports whether one of patterns matches rel's base name
// or the whole of rel, the pattern taken as given; a pattern with a
// leading "**/" also matches the base name by the rest.
func BaseOrPathLoose(rel string, patterns []string) bool {
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
