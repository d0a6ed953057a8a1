// Package apipath takes API paths apart and puts them together: the
// clean, absolute, slash-separated paths core names files by ("/" is the
// sandbox root; core/doc.go, "Path model"). Its functions never clean,
// unlike path.Split and path.Join: they take a path already clean; Check
// says what is wrong with a client's path before it is (check.go). It is
// a leaf that core and its subpackages share, so neither keeps a copy;
// it imports nothing of sandfs.
package apipath

import "strings"

// Split returns the parent API path and the last component of a clean
// API path. The root has no last component: Split("/") is ("/", "").
func Split(p string) (dir, name string) {
	if p == "/" {
		return "/", ""
	}
	i := strings.LastIndexByte(p, '/')
	dir = p[:i]
	if dir == "" {
		dir = "/"
	}
	return dir, p[i+1:]
}

// Child appends a name to an API directory path.
func Child(dir, name string) string {
	if dir == "/" {
		return "/" + name
	}
	return dir + "/" + name
}

// Within reports whether p is dir or beneath it ("/" holds everything).
func Within(p, dir string) bool {
	return p == dir || dir == "/" || strings.HasPrefix(p, dir+"/")
}

// Under reports whether p lies strictly inside dir (nothing is inside
// "/" by this test: the callers ask about subtrees of a named directory).
func Under(p, dir string) bool {
	return dir != "/" && strings.HasPrefix(p, dir+"/")
}
