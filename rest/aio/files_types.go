package aio

// Wire types of the AIO file routes of part A (api.md §4; the AIO spec; the
// 1.x schema's FileReadRequest, FileWriteRequest, StrReplaceEditorRequest,
// FileReplaceRequest, FileListRequest, FileFindRequest, FileGlobRequest and
// their results). snake_case, as the AIO clients read them. Request fields
// are pointers where absent and zero differ; the required ones are checked
// by the handlers (422 missing).

// fileReadRequest is FileReadRequest (v1). sudo is accepted and ignored.
type fileReadRequest struct {
	File      *string `json:"file"`
	Path      *string `json:"path"` // accepted as an alias of file
	StartLine *int    `json:"start_line"`
	EndLine   *int    `json:"end_line"`
	Sudo      *bool   `json:"sudo"`
}

// FileReadResult is FileReadResult.
type FileReadResult struct {
	Content string `json:"content"`
	File    string `json:"file"`
}

// fileWriteRequest is FileWriteRequest (v1: file; v2: path), plus user.
type fileWriteRequest struct {
	File            *string `json:"file"`
	Path            *string `json:"path"`
	Content         *string `json:"content"`
	Encoding        *string `json:"encoding"`
	Append          *bool   `json:"append"`
	LeadingNewline  *bool   `json:"leading_newline"`
	TrailingNewline *bool   `json:"trailing_newline"`
	Sudo            *bool   `json:"sudo"`
	User            *string `json:"user"`
	ExpectedETag    *string `json:"expected_etag"` // httpkit/precondition.go
}

// FileWriteResult is FileWriteResult.
type FileWriteResult struct {
	File         string `json:"file"`
	BytesWritten int64  `json:"bytes_written"`
}

// editRequest is StrReplaceEditorRequest (v1 str_replace_editor, v2 edit)
// and FileReplaceRequest (v1 replace: file, old_str, new_str).
type editRequest struct {
	Command     *string `json:"command"`
	Path        *string `json:"path"`
	File        *string `json:"file"`
	FileText    *string `json:"file_text"`
	OldStr      *string `json:"old_str"`
	NewStr      *string `json:"new_str"`
	InsertLine  *int    `json:"insert_line"`
	ViewRange   []int   `json:"view_range"`
	ReplaceMode *string `json:"replace_mode"`
	Sudo        *bool   `json:"sudo"`
	User        *string `json:"user"`
	// ExpectedETag: the file's ETag the edit expects (httpkit/precondition.go).
	ExpectedETag *string `json:"expected_etag"`
}

// EditResult is StrReplaceEditorResult.
type EditResult struct {
	Output     string  `json:"output"`
	Path       string  `json:"path"`
	PrevExist  bool    `json:"prev_exist"`
	OldContent *string `json:"old_content"`
	NewContent *string `json:"new_content"`
	etag       string  // the ETag of the file written, sent as a header
}

// ReplaceResult is FileReplaceResult (v1 replace).
type ReplaceResult struct {
	File          string `json:"file"`
	ReplacedCount int    `json:"replaced_count"`
}

// pathRequest is a body naming one path (v1 stat, mkdir, delete).
type pathRequest struct {
	Path           *string `json:"path"`
	File           *string `json:"file"` // alias of path
	FollowSymlinks *bool   `json:"follow_symlinks"`
	Parents        *bool   `json:"parents"`
	Recursive      *bool   `json:"recursive"`
	User           *string `json:"user"`
	ExpectedETag   *string `json:"expected_etag"` // delete's precondition (httpkit/precondition.go)
}

// StatResult is the data of stat.
type StatResult struct {
	Path         string `json:"path"`
	Size         int64  `json:"size"`
	Permissions  string `json:"permissions"`
	IsDirectory  bool   `json:"is_directory"`
	IsSymlink    bool   `json:"is_symlink"`
	ModifiedTime string `json:"modified_time"`
	ETag         string `json:"etag,omitempty"` // an extension: the ETag a precondition names
}

// listRequest is FileListRequest.
type listRequest struct {
	Path               *string  `json:"path"`
	Recursive          *bool    `json:"recursive"`
	ShowHidden         *bool    `json:"show_hidden"`
	FileTypes          []string `json:"file_types"`
	MaxDepth           *int     `json:"max_depth"`
	IncludeSize        *bool    `json:"include_size"`
	IncludePermissions *bool    `json:"include_permissions"`
	SortBy             *string  `json:"sort_by"`
	SortDesc           *bool    `json:"sort_desc"`
}

// ListEntry is FileInfo: is_hidden only when true, permissions only when
// asked for.
type ListEntry struct {
	Name         string  `json:"name"`
	Path         string  `json:"path"`
	IsDirectory  bool    `json:"is_directory"`
	Size         *int64  `json:"size"`
	Extension    *string `json:"extension"`
	ModifiedTime string  `json:"modified_time"`
	IsHidden     bool    `json:"is_hidden,omitempty"`
	Permissions  *string `json:"permissions,omitempty"`

	mtime int64 // for sorting
	size  int64 // for sorting, also when Size is not shown (include_size false)
}

// ListResult is FileListResult plus truncated.
type ListResult struct {
	Path           string      `json:"path"`
	Files          []ListEntry `json:"files"`
	TotalCount     int         `json:"total_count"`
	FileCount      int         `json:"file_count"`
	DirectoryCount int         `json:"directory_count"`
	Truncated      bool        `json:"truncated"`
}

// findRequest is FileFindRequest (v1 find).
type findRequest struct {
	Path *string `json:"path"`
	Glob *string `json:"glob"`
}

// FindResult is FileFindResult plus truncated (v2 search answers it too).
type FindResult struct {
	Path      string   `json:"path"`
	Files     []string `json:"files"`
	Truncated bool     `json:"truncated"`
}

// globRequest is FileGlobRequest.
type globRequest struct {
	Path            *string  `json:"path"`
	Pattern         *string  `json:"pattern"`
	Exclude         []string `json:"exclude"`
	IncludeHidden   *bool    `json:"include_hidden"`
	FilesOnly       *bool    `json:"files_only"`
	IncludeMetadata *bool    `json:"include_metadata"`
	MaxResults      *int     `json:"max_results"`
	SortBy          *string  `json:"sort_by"`
	SortDesc        *bool    `json:"sort_desc"`
}

// globEntry is GlobFileInfo.
type globEntry struct {
	Path         string  `json:"path"`
	Name         string  `json:"name"`
	IsDirectory  bool    `json:"is_directory"`
	Size         *int64  `json:"size"`
	ModifiedTime *string `json:"modified_time"`

	size, mtime int64 // for sorting
}

// GlobResult is FileGlobResult.
type GlobResult struct {
	Path       string      `json:"path"`
	Pattern    string      `json:"pattern"`
	Files      []globEntry `json:"files"`
	TotalCount int         `json:"total_count"`
	Truncated  bool        `json:"truncated"`
}

// mkdirRequest / MkdirResult: mkdir (v1 and v2).
type MkdirResult struct {
	Path    string `json:"path"`
	Created bool   `json:"created"`
}

// transferRequest is the body of copy and move (v1 and v2).
type transferRequest struct {
	Source      *string `json:"source"`
	Destination *string `json:"destination"`
	Overwrite   *bool   `json:"overwrite"`
	User        *string `json:"user"`
	// ExpectedETag: move's precondition on the source, copy's on the
	// destination (httpkit/precondition.go).
	ExpectedETag *string `json:"expected_etag"`
}

// MoveResult is the data of move.
type MoveResult struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// CopyResult is the data of copy.
type CopyResult struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Entries     int    `json:"entries"`
	BytesCopied int64  `json:"bytes_copied"`
}

// DeleteResult is the data of delete.
type DeleteResult struct {
	Path string `json:"path"`
}

// capabilities is the data of GET /v1/capabilities.
type Capabilities struct {
	Files           map[string]bool `json:"files"`
	Exec            bool            `json:"exec"`
	Browser         bool            `json:"browser"`
	Computer        bool            `json:"computer"`
	CodeInterpreter bool            `json:"code_interpreter"`
}
