package api

// The named family's files (api.md §5): /v1/sandboxes/{name}/fs/….

// Entry is one entry of a listing or a stat (api.md §5).
type Entry struct {
	Name    string `json:"name"`
	Path    string `json:"path"`
	Type    string `json:"type"` // file, directory, symlink (anything else: file)
	Size    int64  `json:"size"`
	Mode    string `json:"mode"` // octal permission and special bits, "0644"
	ModTime string `json:"modTime"`
	IsDir   bool   `json:"isDir"`
	Etag    string `json:"etag,omitempty"`   // stat only: the file's ETag, what a precondition names
	Target  string `json:"target,omitempty"` // a symlink's target as stored (ls -l's "->")
}

// List is a directory's listing (GET …/fs/list).
type List struct {
	Path      string  `json:"path"`
	Entries   []Entry `json:"entries"`
	Count     int     `json:"count"`
	Truncated bool    `json:"truncated,omitempty"`
}
