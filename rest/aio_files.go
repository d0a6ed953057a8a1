package rest

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/journal"
)

// The AIO file routes of part A (API.md §4; seed 001 "Read and write
// files", "Files and directories", "Search", "Ownership identity"): text
// read, write, the anchored editor (aio_edit.go), stat, list, name search
// and glob, mkdir, copy, move, delete, and GET /v1/capabilities. Each route
// has a v2 form (query parameters or a JSON body, failures with the status
// of §2) and a v1 form (a JSON body with the 1.x schema's field names,
// expected filesystem failures 200 + success:false); both call the same
// code below.

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
}

var _ fileFS = (*core.Sandbox)(nil)

func (s *Server) fileFS() fileFS { return s.sandboxes["default"] }

// Limits of the file routes (API.md §1). Tests shrink them.
type aioFileLimits struct {
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

var defaultAIOFileLimits = aioFileLimits{
	ReadBytes: 16 << 20, List: 10_000, Search: 10_000, Glob: 5_000, GlobMax: 50_000,
	UndoPer: 10, UndoBytes: 64 << 20, ViewDepth: 2, ViewLimit: 1_000, SnippetCtx: 4,
	Visit: 1_000_000,
}

// aioFiles is the Server's state for the file routes.
type aioFiles struct {
	once   sync.Once
	limits aioFileLimits
	undo   *undoHistory
}

// files returns the file routes' state, made on first use.
func (s *Server) files() *aioFiles {
	s.fileState.once.Do(func() {
		if s.fileState.limits == (aioFileLimits{}) {
			s.fileState.limits = defaultAIOFileLimits
		}
		s.fileState.undo = newUndoHistory(s.fileState.limits.UndoPer, s.fileState.limits.UndoBytes)
	})
	return &s.fileState
}

// ---- request helpers ----

// missing is the 422 of a required body field that is absent.
func missing(field string) error {
	return invalidField("body."+field, "missing", "Field required")
}

// pick returns the first non-nil of the given fields (a field and its
// alias), or nil.
func pick(ps ...*string) *string {
	for _, p := range ps {
		if p != nil {
			return p
		}
	}
	return nil
}

func boolOr(b *bool, def bool) bool {
	if b == nil {
		return def
	}
	return *b
}

func strOr(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

// ownerCtx stamps the request's owner (?user= on both versions, or the
// body's user field) on ctx; see aio_user.go.
func ownerCtx(r *http.Request, q url.Values, bodyUser *string) (context.Context, error) {
	u := q.Get("user")
	if bodyUser != nil && *bodyUser != "" {
		u = *bodyUser
	}
	return withOwner(r.Context(), u)
}

// isV1 tells the two dialects apart in a handler both serve.
func isV1(r *http.Request) bool { return strings.HasPrefix(r.URL.Path, "/v1/") }

// ---- read ----

// readV2: GET /v2/fs/read?path&start_line&end_line.
func (s *Server) readV2(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := query(r)
	if err != nil {
		return err
	}
	p, err := requiredQuery(q, "path", aioDialect)
	if err != nil {
		return err
	}
	start, err := intQuery[int](q, "start_line", aioDialect)
	if err != nil {
		return err
	}
	end, err := intQuery[int](q, "end_line", aioDialect)
	if err != nil {
		return err
	}
	res, err := s.readText(r.Context(), p, start, end)
	if err != nil {
		return withOp("read", err)
	}
	return writeAIO(w, res)
}

// readV1: POST /v1/file/read {file, start_line, end_line, sudo}.
func (s *Server) readV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req fileReadRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	p := pick(req.File, req.Path)
	if p == nil {
		return missing("file")
	}
	res, err := s.readText(r.Context(), *p, req.StartLine, req.EndLine)
	if err != nil {
		return withOp("read", err)
	}
	return writeAIO(w, res)
}

// readText reads the text file at p whole (up to the buffered limit) and
// returns lines [start, end): 0-based, end exclusive, negative counting
// from the end, out of range clamped (Python slice semantics, as the 1.x
// daemon slices its list of lines). Line endings are kept.
func (s *Server) readText(ctx context.Context, p string, start, end *int) (fileReadResult, error) {
	ap, content, err := s.readWhole(ctx, p)
	if err != nil {
		return fileReadResult{}, err
	}
	if start != nil || end != nil {
		lines := splitLines(content)
		a, b := sliceBounds(len(lines), start, end)
		content = strings.Join(lines[a:b], "")
	}
	return fileReadResult{Content: content, File: ap}, nil
}

// readWhole reads the regular file at p as UTF-8 text of at most the
// buffered limit: over it is file_too_large (413), bytes that are not UTF-8
// are decode_error (422).
func (s *Server) readWhole(ctx context.Context, p string) (string, string, error) {
	limit := s.files().limits.ReadBytes
	f, info, err := s.fileFS().OpenFile(ctx, p)
	if err != nil {
		return "", "", err
	}
	defer f.Close()
	tooLarge := func(size int64) error {
		return &fileError{kind: kindTooLarge, status: http.StatusRequestEntityTooLarge, op: "read", path: info.Path,
			msg: fmt.Sprintf("file %s is %d bytes, over the %d-byte buffered text limit; download streams it instead", info.Path, size, limit)}
	}
	if info.Size > limit {
		return "", "", tooLarge(info.Size)
	}
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return "", "", &fs.PathError{Op: "read", Path: info.Path, Err: err}
	}
	if int64(len(b)) > limit {
		return "", "", tooLarge(int64(len(b)))
	}
	if !utf8.Valid(b) {
		off := 0
		for off < len(b) {
			r, n := utf8.DecodeRune(b[off:])
			if r == utf8.RuneError && n <= 1 {
				break
			}
			off += n
		}
		return "", "", &fileError{kind: kindDecode, status: http.StatusUnprocessableEntity, op: "read", path: info.Path,
			msg: fmt.Sprintf("file %s is not UTF-8 text (invalid byte at offset %d); download reads bytes", info.Path, off)}
	}
	return info.Path, string(b), nil
}

// splitLines splits text after each "\n", keeping the endings ("\r\n"
// stays whole); a last line without an ending is a line.
func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	lines := strings.SplitAfter(s, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// sliceBounds is Python's lines[start:end] on n lines.
func sliceBounds(n int, start, end *int) (int, int) {
	norm := func(p *int, def int) int {
		if p == nil {
			return def
		}
		v := *p
		if v < 0 {
			v += n
		}
		return min(max(v, 0), n)
	}
	a, b := norm(start, 0), norm(end, n)
	if b < a {
		b = a
	}
	return a, b
}

// ---- write ----

// writeFile: POST /v2/fs/write {path, content, encoding, append,
// leading_newline, trailing_newline}, POST /v1/file/write {file, …}; ?user
// or the body's user names the owner of what the write creates.
func (s *Server) writeFile(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req fileWriteRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	p := pick(req.Path, req.File)
	if isV1(r) {
		p = pick(req.File, req.Path)
	}
	switch {
	case p == nil && isV1(r):
		return missing("file")
	case p == nil:
		return missing("path")
	case req.Content == nil:
		return missing("content")
	}
	data, err := encodeContent(req)
	if err != nil {
		return withOp("write", err)
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	ctx, err := ownerCtx(r, q, req.User)
	if err != nil {
		return withOp("write", err)
	}
	fsys := s.fileFS()
	var n int64
	if _, owned := core.OwnerOf(ctx); owned && !boolOr(req.Append, false) {
		// A write that names an owner stages through a .part (seed 001).
		n, err = fsys.WriteFile(ctx, *p, bytes.NewReader(data), core.WriteOptions{MkdirParents: true})
	} else {
		// A plain write keeps the destination's inode (seed 001).
		n, err = fsys.WriteInPlace(ctx, *p, bytes.NewReader(data), core.InPlaceOptions{MkdirParents: true, Append: boolOr(req.Append, false)})
	}
	if err != nil {
		return withOp("write", err)
	}
	ap, err := fsys.Clean(*p)
	if err != nil {
		return withOp("write", err)
	}
	return writeAIO(w, fileWriteResult{File: ap, BytesWritten: n})
}

// encodeContent turns the request's content into the bytes to write:
// utf-8 as it is (leading_newline and trailing_newline add a "\n"), base64
// decoded (400 when it is not base64), raw one byte per character (400 for
// a character above U+00FF).
func encodeContent(req fileWriteRequest) ([]byte, error) {
	c := *req.Content
	switch enc := strOr(req.Encoding, "utf-8"); enc {
	case "utf-8", "utf8":
		if boolOr(req.LeadingNewline, false) {
			c = "\n" + c
		}
		if boolOr(req.TrailingNewline, false) {
			c += "\n"
		}
		return []byte(c), nil
	case "base64":
		compact := strings.Map(func(r rune) rune {
			if r == '\n' || r == '\r' || r == ' ' || r == '\t' {
				return -1
			}
			return r
		}, c)
		b, err := base64.StdEncoding.DecodeString(compact)
		if err != nil {
			if b2, err2 := base64.RawStdEncoding.DecodeString(compact); err2 == nil {
				return b2, nil
			}
			return nil, invalidRequest("content is not valid base64: %v", err)
		}
		return b, nil
	case "raw":
		b := make([]byte, 0, len(c))
		for i, r := range c {
			if r > 0xFF {
				return nil, invalidRequest("raw content holds %q at byte offset %d: raw writes one byte per character, U+0000 to U+00FF", r, i)
			}
			b = append(b, byte(r))
		}
		return b, nil
	default:
		return nil, invalidField("body.encoding", "enum", "Input should be 'utf-8', 'base64' or 'raw', got %q", enc)
	}
}

// ---- stat ----

// statV2: GET /v2/fs/stat?path&follow_symlinks.
func (s *Server) statV2(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := query(r)
	if err != nil {
		return err
	}
	p, err := requiredQuery(q, "path", aioDialect)
	if err != nil {
		return err
	}
	follow, err := boolQuery(q, "follow_symlinks", true, aioDialect)
	if err != nil {
		return err
	}
	return s.stat(w, r, p, follow)
}

// statV1: POST /v1/file/stat {path, follow_symlinks}.
func (s *Server) statV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req pathRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	p := pick(req.Path, req.File)
	if p == nil {
		return missing("path")
	}
	return s.stat(w, r, *p, boolOr(req.FollowSymlinks, true))
}

func (s *Server) stat(w http.ResponseWriter, r *http.Request, p string, follow bool) error {
	fsys := s.fileFS()
	li, err := fsys.Lstat(r.Context(), p)
	if err != nil {
		return withOp("stat", err)
	}
	info := li
	if follow && li.IsSymlink() {
		if info, err = fsys.Stat(r.Context(), p); err != nil {
			return withOp("stat", err)
		}
		info.Path = li.Path
	}
	return writeAIO(w, statResult{
		Path:         li.Path,
		Size:         info.Size,
		Permissions:  modeString(info.Mode),
		IsDirectory:  info.IsDir(),
		IsSymlink:    li.IsSymlink(),
		ModifiedTime: rfc3339(info.ModTime),
	})
}

// ---- list ----

type listOpts struct {
	recursive, hidden, size, perms, desc bool
	maxDepth                             int
	sortBy                               string
	types                                []string
}

// listV2: GET /v2/fs/list?path&recursive&show_hidden&max_depth&
// include_permissions&sort_by&sort_desc.
func (s *Server) listV2(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := query(r)
	if err != nil {
		return err
	}
	p, err := requiredQuery(q, "path", aioDialect)
	if err != nil {
		return err
	}
	o := listOpts{size: true, sortBy: q.Get("sort_by")}
	for _, b := range []struct {
		name string
		dst  *bool
		def  bool
	}{{"recursive", &o.recursive, false}, {"show_hidden", &o.hidden, true}, {"include_size", &o.size, true},
		{"include_permissions", &o.perms, false}, {"sort_desc", &o.desc, false}} {
		if *b.dst, err = boolQuery(q, b.name, b.def, aioDialect); err != nil {
			return err
		}
	}
	md, err := intQuery[int](q, "max_depth", aioDialect)
	if err != nil {
		return err
	}
	if md != nil {
		o.maxDepth = *md
	}
	if ft := q["file_types"]; len(ft) > 0 {
		for _, v := range ft {
			o.types = append(o.types, strings.Split(v, ",")...)
		}
	}
	return s.list(w, r, p, o)
}

// listV1: POST /v1/file/list FileListRequest.
func (s *Server) listV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req listRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	if req.Path == nil {
		return missing("path")
	}
	o := listOpts{
		recursive: boolOr(req.Recursive, false), hidden: boolOr(req.ShowHidden, true),
		size: boolOr(req.IncludeSize, true), perms: boolOr(req.IncludePermissions, false),
		desc: boolOr(req.SortDesc, false), sortBy: strOr(req.SortBy, ""), types: req.FileTypes,
	}
	if req.MaxDepth != nil {
		o.maxDepth = *req.MaxDepth
	}
	return s.list(w, r, *req.Path, o)
}

// list walks the directory p: its entries, or with recursive everything
// under it to max_depth levels (1 = the entries themselves; absent or ≤ 0 =
// no bound). Symlinks to directories count as directories and are never
// descended. file_types keeps files whose extension is listed (directories
// stay). At most the list limit of entries, then truncated.
func (s *Server) list(w http.ResponseWriter, r *http.Request, p string, o listOpts) error {
	lim := s.files().limits
	less, err := listOrder(o.sortBy)
	if err != nil {
		return withOp("list", err)
	}
	fsys := s.fileFS()
	info, err := fsys.Stat(r.Context(), p)
	if err != nil {
		return withOp("list", err)
	}
	if !info.IsDir() {
		return withOp("list", &fs.PathError{Op: core.OpList, Path: info.Path, Err: errnoNotDir})
	}
	wo := core.WalkOptions{MaxDepth: 1, NoHidden: !o.hidden}
	if o.recursive {
		wo.MaxDepth = max(o.maxDepth, 0)
	}
	types := map[string]bool{}
	for _, t := range o.types {
		if t = strings.TrimSpace(t); t != "" {
			types["."+strings.TrimPrefix(strings.ToLower(t), ".")] = true
		}
	}
	res := listResult{Path: info.Path, Files: []listEntry{}}
	visited := 0
	ctx, skipped := core.WithSkippedNames(r.Context())
	err = fsys.Walk(ctx, info.Path, wo, func(e core.WalkEntry) error {
		if visited++; visited > lim.Visit {
			res.Truncated = true
			return fs.SkipAll
		}
		dir := e.IsDirLike()
		if len(types) > 0 && !dir && !types[strings.ToLower(path.Ext(e.Name))] {
			return nil
		}
		if len(res.Files) >= lim.List {
			res.Truncated = true
			return fs.SkipAll
		}
		le := listEntry{Name: e.Name, Path: e.Path, IsDirectory: dir, ModifiedTime: rfc3339(e.ModTime),
			IsHidden: strings.HasPrefix(e.Name, "."), mtime: e.ModTime.UnixNano()}
		if o.size {
			sz := e.Size
			le.Size = &sz
		}
		if ext := path.Ext(e.Name); !dir && ext != "" && ext != e.Name {
			le.Extension = &ext
		}
		if o.perms {
			ps := modeString(e.Mode)
			le.Permissions = &ps
		}
		res.Files = append(res.Files, le)
		if dir {
			res.DirectoryCount++
		} else {
			res.FileCount++
		}
		return nil
	})
	if err != nil {
		return withOp("list", err)
	}
	sort.SliceStable(res.Files, func(i, j int) bool {
		if o.desc {
			return less(res.Files[j], res.Files[i])
		}
		return less(res.Files[i], res.Files[j])
	})
	res.TotalCount = len(res.Files)
	noteSkipped(w, skipped)
	return writeAIO(w, res)
}

// listOrder is the comparison of sort_by: name (default; the path, so a
// recursive listing reads as a tree), size, modified, type (directories
// first, then by extension, then by path).
func listOrder(by string) (func(a, b listEntry) bool, error) {
	size := func(e listEntry) int64 {
		if e.Size == nil {
			return 0
		}
		return *e.Size
	}
	ext := func(e listEntry) string {
		if e.Extension == nil {
			return ""
		}
		return *e.Extension
	}
	switch by {
	case "", "name", "path":
		return func(a, b listEntry) bool { return a.Path < b.Path }, nil
	case "size":
		return func(a, b listEntry) bool {
			if size(a) != size(b) {
				return size(a) < size(b)
			}
			return a.Path < b.Path
		}, nil
	case "modified", "mtime", "modified_time":
		return func(a, b listEntry) bool {
			if a.mtime != b.mtime {
				return a.mtime < b.mtime
			}
			return a.Path < b.Path
		}, nil
	case "type":
		return func(a, b listEntry) bool {
			if a.IsDirectory != b.IsDirectory {
				return a.IsDirectory
			}
			if ext(a) != ext(b) {
				return ext(a) < ext(b)
			}
			return a.Path < b.Path
		}, nil
	}
	return nil, invalidRequest("sort_by must be one of name, size, modified, type; got %q", by)
}

// ---- name search (v2 search, v1 find) and glob ----

// searchV2: GET /v2/fs/search?path&pattern.
func (s *Server) searchV2(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := query(r)
	if err != nil {
		return err
	}
	p, err := requiredQuery(q, "path", aioDialect)
	if err != nil {
		return err
	}
	pattern, err := requiredQuery(q, "pattern", aioDialect)
	if err != nil {
		return err
	}
	return s.find(w, r, p, pattern)
}

// findV1: POST /v1/file/find {path, glob}.
func (s *Server) findV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req findRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	switch {
	case req.Path == nil:
		return missing("path")
	case req.Glob == nil:
		return missing("glob")
	}
	return s.find(w, r, *req.Path, *req.Glob)
}

// compileGlob compiles a client's glob; a malformed one is a 400.
func compileGlob(field, pattern string) (*core.Glob, error) {
	g, err := core.CompileGlob(pattern)
	if err != nil {
		var pe *core.PatternError
		if errors.As(err, &pe) {
			return nil, invalidRequest("%s: %v", field, err)
		}
		return nil, invalidRequest("%s: bad glob pattern %q", field, pattern)
	}
	return g, nil
}

// find lists the paths under the directory p whose name matches pattern: a
// pattern without "/" matches the name at any depth ("*.go" is
// "**/*.go"), one with "/" the path relative to p, "**" spanning any
// number of directories. Files and directories both match; hidden names
// are searched; symlinks are not descended. At most the search limit of
// paths, in walk order (depth first, names in byte order), then truncated.
func (s *Server) find(w http.ResponseWriter, r *http.Request, p, pattern string) error {
	limit, visit := s.files().limits.Search, s.files().limits.Visit
	pat := strings.TrimPrefix(pattern, "./")
	if !strings.Contains(strings.Trim(pat, "/"), "/") {
		pat = "**/" + pat
	}
	g, err := compileGlob("pattern", pat)
	if err != nil {
		return withOp("find", err)
	}
	fsys := s.fileFS()
	info, err := fsys.Stat(r.Context(), p)
	if err != nil {
		return withOp("find", err)
	}
	if !info.IsDir() {
		return withOp("find", &fs.PathError{Op: "find", Path: info.Path, Err: errnoNotDir})
	}
	res := findResult{Path: info.Path, Files: []string{}}
	visited := 0
	ctx, skipped := core.WithSkippedNames(r.Context())
	err = fsys.Walk(ctx, info.Path, core.WalkOptions{MaxDepth: g.MaxDepth()}, func(e core.WalkEntry) error {
		if visited++; visited > visit {
			res.Truncated = true
			return fs.SkipAll
		}
		if !g.Match(e.Rel) {
			return nil
		}
		if len(res.Files) >= limit {
			res.Truncated = true
			return fs.SkipAll
		}
		res.Files = append(res.Files, e.Path)
		return nil
	})
	if err != nil {
		return withOp("find", err)
	}
	noteSkipped(w, skipped)
	return writeAIO(w, res)
}

// globV1: POST /v1/file/glob FileGlobRequest: the paths under path that
// match pattern relative to it (Python glob semantics: "*.py" is the top
// level only, "**/*.py" any depth; hidden names only with include_hidden),
// minus exclude, with metadata, sorted, at most max_results (default 5,000,
// bound 1–50,000) then truncated.
func (s *Server) globV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req globRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	switch {
	case req.Path == nil:
		return missing("path")
	case req.Pattern == nil:
		return missing("pattern")
	}
	lim := s.files().limits
	maxRes := lim.Glob
	if req.MaxResults != nil {
		switch m := *req.MaxResults; {
		case m < 1:
			return invalidField("body.max_results", "greater_than_equal", "Input should be greater than or equal to 1")
		case m > lim.GlobMax:
			return invalidField("body.max_results", "less_than_equal", "Input should be less than or equal to %d", lim.GlobMax)
		default:
			maxRes = m
		}
	}
	g, err := compileGlob("pattern", *req.Pattern)
	if err != nil {
		return withOp("glob", err)
	}
	for _, ex := range req.Exclude {
		if err := core.CheckGlob(strings.Trim(ex, "/")); err != nil {
			return withOp("glob", invalidRequest("exclude: %v", err))
		}
	}
	sortBy := strOr(req.SortBy, "path")
	switch sortBy {
	case "path", "name", "size", "modified":
	default:
		return withOp("glob", invalidRequest("sort_by must be one of path, name, size, modified; got %q", sortBy))
	}
	filesOnly, meta := boolOr(req.FilesOnly, true), boolOr(req.IncludeMetadata, true)
	fsys := s.fileFS()
	info, err := fsys.Stat(r.Context(), *req.Path)
	if err != nil {
		return withOp("glob", err)
	}
	if !info.IsDir() {
		return withOp("glob", &fs.PathError{Op: "glob", Path: info.Path, Err: errnoNotDir})
	}
	res := globResult{Path: info.Path, Pattern: *req.Pattern, Files: []globEntry{}}
	wo := core.WalkOptions{MaxDepth: g.MaxDepth(), NoHidden: !boolOr(req.IncludeHidden, false)}
	visited := 0
	ctx, skipped := core.WithSkippedNames(r.Context())
	err = fsys.Walk(ctx, info.Path, wo, func(e core.WalkEntry) error {
		if visited++; visited > lim.Visit {
			res.Truncated = true
			return fs.SkipAll
		}
		if len(req.Exclude) > 0 && journal.Excluded(e.Rel, req.Exclude) {
			if e.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		dir := e.IsDirLike()
		if (filesOnly && dir) || !g.Match(e.Rel) {
			return nil
		}
		if len(res.Files) >= maxRes {
			res.Truncated = true
			return fs.SkipAll
		}
		ge := globEntry{Path: e.Path, Name: e.Name, IsDirectory: dir, size: e.Size, mtime: e.ModTime.UnixNano()}
		if meta {
			sz, mt := e.Size, rfc3339(e.ModTime)
			ge.Size, ge.ModifiedTime = &sz, &mt
		}
		res.Files = append(res.Files, ge)
		return nil
	})
	if err != nil {
		return withOp("glob", err)
	}
	desc := boolOr(req.SortDesc, false)
	sort.SliceStable(res.Files, func(i, j int) bool {
		a, b := res.Files[i], res.Files[j]
		if desc {
			a, b = b, a
		}
		switch sortBy {
		case "name":
			if a.Name != b.Name {
				return a.Name < b.Name
			}
		case "size":
			if a.size != b.size {
				return a.size < b.size
			}
		case "modified":
			if a.mtime != b.mtime {
				return a.mtime < b.mtime
			}
		}
		return a.Path < b.Path
	})
	res.TotalCount = len(res.Files)
	noteSkipped(w, skipped)
	return writeAIO(w, res)
}

// ---- mkdir, copy, move, delete ----

// mkdir: POST /v2/fs/mkdir {path, parents}, POST /v1/file/mkdir; ?user or
// the body's user owns the directories made. parents defaults to true (an
// existing directory is then fine); without it an existing path is
// already_exists and a missing parent not_found.
func (s *Server) mkdir(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req pathRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	p := pick(req.Path, req.File)
	if p == nil {
		return missing("path")
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	ctx, err := ownerCtx(r, q, req.User)
	if err != nil {
		return withOp("mkdir", err)
	}
	fsys := s.fileFS()
	ap, err := fsys.Clean(*p)
	if err != nil {
		return withOp("mkdir", err)
	}
	_, serr := fsys.Stat(ctx, ap)
	if err := fsys.Mkdir(ctx, ap, boolOr(req.Parents, true), 0); err != nil {
		return withOp("mkdir", err)
	}
	return writeAIO(w, mkdirResult{Path: ap, Created: serr != nil})
}

func (s *Server) transferPaths(w http.ResponseWriter, r *http.Request) (transferRequest, string, string, error) {
	var req transferRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return req, "", "", err
	}
	switch {
	case req.Source == nil:
		return req, "", "", missing("source")
	case req.Destination == nil:
		return req, "", "", missing("destination")
	}
	fsys := s.fileFS()
	src, err := fsys.Clean(*req.Source)
	if err != nil {
		return req, "", "", err
	}
	dst, err := fsys.Clean(*req.Destination)
	if err != nil {
		return req, "", "", err
	}
	return req, src, dst, nil
}

// copyEntry: POST /v2/fs/copy, POST /v1/file/copy {source, destination,
// overwrite}: a file (mode kept, data cloned or copied in the kernel) or a
// directory whole (symlinks copied as symlinks); an existing destination is
// already_exists unless overwrite; missing parents of the destination are
// made. ?user or the body's user owns what the copy creates.
func (s *Server) copyEntry(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	req, src, dst, err := s.transferPaths(w, r)
	if err != nil {
		return withOp("copy", err)
	}
	q, err := query(r)
	if err != nil {
		return err
	}
	ctx, err := ownerCtx(r, q, req.User)
	if err != nil {
		return withOp("copy", err)
	}
	st, err := s.fileFS().Copy(ctx, src, dst, core.CopyOptions{Overwrite: boolOr(req.Overwrite, false), MkdirParents: true})
	if err != nil {
		return withOp("copy", err)
	}
	return writeAIO(w, copyResult{Source: src, Destination: dst, Entries: st.Entries, BytesCopied: st.Bytes})
}

// moveEntry: POST /v2/fs/move, POST /v1/file/move {source, destination,
// overwrite}: renameat2(RENAME_NOREPLACE) unless overwrite; missing parents
// of the destination are made.
func (s *Server) moveEntry(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	req, src, dst, err := s.transferPaths(w, r)
	if err != nil {
		return withOp("move", err)
	}
	if err := s.fileFS().Move(r.Context(), src, dst, core.MoveOptions{Overwrite: boolOr(req.Overwrite, false), MkdirParents: true}); err != nil {
		return withOp("move", err)
	}
	return writeAIO(w, moveResult{Source: src, Destination: dst})
}

// deleteEntry: POST /v2/fs/delete, POST /v1/file/delete {path, recursive}:
// a non-empty directory needs recursive (else invalid_target, 409 on v2).
func (s *Server) deleteEntry(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	var req pathRequest
	if err := decodeAIO(w, r, s.limits.MaxJSONBody, &req, false); err != nil {
		return err
	}
	p := pick(req.Path, req.File)
	if p == nil {
		return missing("path")
	}
	fsys := s.fileFS()
	ap, err := fsys.Clean(*p)
	if err != nil {
		return withOp("delete", err)
	}
	if err := fsys.Remove(r.Context(), ap, boolOr(req.Recursive, false)); err != nil {
		return withOp("delete", err)
	}
	return writeAIO(w, deleteResult{Path: ap})
}

// ---- capabilities ----

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
// the AIO sandbox are not sandfs's: false.
func (s *Server) capabilitiesV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	have := map[string]bool{}
	for _, rt := range s.routes {
		have[rt.Method+" "+rt.Path] = true
	}
	files := map[string]bool{}
	for op, key := range capabilityRoutes {
		files[op] = key != "" && have[key]
	}
	return writeAIO(w, capabilities{Files: files})
}

// errnoNotDir is ENOTDIR, for the routes that need a directory.
var errnoNotDir error = unix.ENOTDIR
