package api

// The sandbox-agent family's /v1/fs routes (api.md §3), as its OpenAPI
// document names them.

// FSEntry is FsEntry, one element of GET /v1/fs/entries.
type FSEntry struct {
	Name      string `json:"name"`
	Path      string `json:"path"`
	EntryType string `json:"entryType"`
	Size      uint64 `json:"size"`
	Modified  string `json:"modified,omitempty"`
}

// FSStat is FsStat, the answer of GET /v1/fs/stat.
type FSStat struct {
	Path      string `json:"path"`
	EntryType string `json:"entryType"`
	Size      uint64 `json:"size"`
	Modified  string `json:"modified,omitempty"`
	Etag      string `json:"etag,omitempty"` // an extension: the file's ETag, what a precondition names
}

// FSWrite is FsWriteResponse, the answer of PUT /v1/fs/file.
type FSWrite struct {
	Path         string `json:"path"`
	BytesWritten uint64 `json:"bytesWritten"`
}

// FSMoveRequest is FsMoveRequest, the body of POST /v1/fs/move. From and To
// are pointers so a missing field is told from an empty one.
type FSMoveRequest struct {
	From      *string `json:"from"`
	To        *string `json:"to"`
	Overwrite *bool   `json:"overwrite"`
}

// FSMove is FsMoveResponse.
type FSMove struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// FSAction is FsActionResponse, the answer of delete and mkdir.
type FSAction struct {
	Path string `json:"path"`
}

// FSUploadBatch is FsUploadBatchResponse.
type FSUploadBatch struct {
	Paths     []string `json:"paths"`
	Truncated bool     `json:"truncated"`
}
