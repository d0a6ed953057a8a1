package rest

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

// fileReadResult is FileReadResult.
type fileReadResult struct {
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
	ExpectedETag    *string `json:"expected_etag"` // precondition.go
}

// fileWriteResult is FileWriteResult.
type fileWriteResult struct {
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
	// ExpectedETag: the file's ETag the edit expects (precondition.go).
	ExpectedETag *string `json:"expected_etag"`
}

// editResult is StrReplaceEditorResult.
type editResult struct {
	Output     string  `json:"output"`
	Path       string  `json:"path"`
	PrevExist  bool    `json:"prev_exist"`
	OldContent *string `json:"old_content"`
	NewContent *string `json:"new_content"`
	etag       string  // the ETag of the file written, sent as a header
}

// replaceResult is FileReplaceResult (v1 replace).
type replaceResult struct {
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
	ExpectedETag   *string `json:"expected_etag"` // delete's precondition (precondition.go)
}

// statResult is the data of stat.
type statResult struct {
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

// listEntry is FileInfo: is_hidden only when true, permissions only when
// asked for.
type listEntry struct {
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

// listResult is FileListResult plus truncated.
type listResult struct {
	Path           string      `json:"path"`
	Files          []listEntry `json:"files"`
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

// findResult is FileFindResult plus truncated (v2 search answers it too).
type findResult struct {
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

// globResult is FileGlobResult.
type globResult struct {
	Path       string      `json:"path"`
	Pattern    string      `json:"pattern"`
	Files      []globEntry `json:"files"`
	TotalCount int         `json:"total_count"`
	Truncated  bool        `json:"truncated"`
}

// mkdirRequest / mkdirResult: mkdir (v1 and v2).
type mkdirResult struct {
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
	// destination (precondition.go).
	ExpectedETag *string `json:"expected_etag"`
}

// moveResult is the data of move.
type moveResult struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
}

// copyResult is the data of copy.
type copyResult struct {
	Source      string `json:"source"`
	Destination string `json:"destination"`
	Entries     int    `json:"entries"`
	BytesCopied int64  `json:"bytes_copied"`
}

// deleteResult is the data of delete.
type deleteResult struct {
	Path string `json:"path"`
}

// capabilities is the data of GET /v1/capabilities.
type capabilities struct {
	Files           map[string]bool `json:"files"`
	Exec            bool            `json:"exec"`
	Browser         bool            `json:"browser"`
	Computer        bool            `json:"computer"`
	CodeInterpreter bool            `json:"code_interpreter"`
}
