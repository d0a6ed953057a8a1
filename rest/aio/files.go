package aio

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"os"
	"sync"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/sys/unix"

	"sandfs/core"
)

// The AIO file routes of part A (api.md §4; the AIO spec "Read and write
// files", "Files and directories", "Search", "Ownership identity"): text
// read, write, the anchored editor (edit.go), stat, list, name search
// and glob, mkdir, copy, move, delete, and GET /v1/capabilities. Each route
// has a v2 form (query parameters or a JSON body, failures with the status
// of §2) and a v1 form (a JSON body with the 1.x schema's field names,
// expected filesystem failures 200 + success:false); both call the same
// code: readwrite.go (read, write, stat), list.go (list, search,
// find, glob), entries.go (mkdir, copy, move, delete), with the request
// helpers of params.go. This file holds what they share: the core
// interface, the limits, and the capabilities route.

// fileFS is what the file routes need from core.
type fileFS interface {
	Clean(p string) (string, error)
	Stat(ctx context.Context, p string) (core.Info, error)
	Lstat(ctx context.Context, p string) (core.Info, error)
	OpenFile(ctx context.Context, p string) (*os.File, core.Info, error)
	WriteFile(ctx context.Context, p string, r io.Reader, o core.WriteOptions) (int64, error)
	WriteInPlace(ctx context.Context, p string, r io.Reader, o core.InPlaceOptions) (int64, error)
	Walk(ctx context.Context, p string, o core.WalkOptions, fn func(core.WalkEntry) error) error
	Mkdir(ctx context.Context, p string, parents bool, mode fs.FileMode) error
	Copy(ctx context.Context, from, to string, o core.CopyOptions) (core.CopyStats, error)
	Move(ctx context.Context, from, to string, o core.MoveOptions) error
	Remove(ctx context.Context, p string, recursive bool) error
	RemoveWith(ctx context.Context, p string, o core.RemoveOptions) error
}

var _ fileFS = (*core.Sandbox)(nil)

func (s *Family) fileFS(ctx context.Context) fileFS { return s.host.SandboxOf(ctx) }

// Limits of the file routes (api.md §1). Tests shrink them.
type FileLimits struct {
	ReadBytes  int64 // buffered text read and edit: 16 MiB → file_too_large
	List       int   // list entries: 10,000 → truncated
	Search     int   // name search / find: 10,000 → truncated
	Glob       int   // glob default max_results: 5,000
	GlobMax    int   // glob max_results bound (1.x schema): 50,000
	UndoPer    int   // undo steps kept per file: 10
	UndoBytes  int64 // undo history in all: 64 MiB (least recently edited files go first)
	ViewDepth  int   // editor view of a directory: 2 levels
	ViewLimit  int   // editor view of a directory: 1,000 entries
	SnippetCtx int   // editor snippet: lines of context around an edit: 4
	Visit      int   // entries one list, search or glob walk looks at: 1,000,000 → truncated
}

var DefaultFileLimits = FileLimits{
	ReadBytes: 16 << 20, List: 10_000, Search: 10_000, Glob: 5_000, GlobMax: 50_000,
	UndoPer: 10, UndoBytes: 64 << 20, ViewDepth: 2, ViewLimit: 1_000, SnippetCtx: 4,
	Visit: 1_000_000,
}

// aioFiles is the family's state for the file routes.
type aioFiles struct {
	once   sync.Once
	limits FileLimits
	undo   *undoHistory
}

// files returns the file routes' state, made on first use.
func (s *Family) files() *aioFiles {
	s.fileState.once.Do(func() {
		if s.fileState.limits == (FileLimits{}) {
			s.fileState.limits = DefaultFileLimits
		}
		s.fileState.undo = newUndoHistory(s.fileState.limits.UndoPer, s.fileState.limits.UndoBytes)
	})
	return &s.fileState
}

// capabilityRoutes names, for each file operation GET /v1/capabilities
// reports, a route whose presence in the table means it is served.
var capabilityRoutes = map[string]string{
	"read": "GET /v2/fs/read", "write": "POST /v2/fs/write", "edit": "POST /v2/fs/edit",
	"list": "GET /v2/fs/list", "stat": "GET /v2/fs/stat", "search": "GET /v2/fs/search",
	"grep": "POST /v2/fs/grep", "glob": "POST /v1/file/glob", "find": "POST /v1/file/find",
	"mkdir": "POST /v2/fs/mkdir", "copy": "POST /v2/fs/copy", "move": "POST /v2/fs/move",
	"delete": "POST /v2/fs/delete", "upload": "POST /v2/fs/upload", "download": "GET /v2/fs/download",
	"tree": "GET /v2/fs/tree", "watch": "POST /v2/watch", "xattr": "GET /v2/fs/xattr",
	"fuse_mount": "",
}

// capabilitiesV1: GET /v1/capabilities. files has one flag per file
// operation, true when its route is in the table (fuse_mount: false, the
// mirror is cmd/sandfs's and the routes cannot see it); the other planes of
// the AIO sandbox are not sandfs's: false. Every route it looks for is one
// of this family's, so the family's own lines are the table's.
func (s *Family) capabilitiesV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	have := map[string]bool{}
	for _, rt := range s.Routes() {
		have[rt.Method+" "+rt.Path] = true
	}
	files := map[string]bool{}
	for op, key := range capabilityRoutes {
		files[op] = key != "" && have[key]
	}
	return writeAIO(w, Capabilities{Files: files})
}

// errnoNotDir is ENOTDIR, for the routes that need a directory.
var errnoNotDir error = unix.ENOTDIR
