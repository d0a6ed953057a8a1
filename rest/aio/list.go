package aio

import (
	"errors"
	"io/fs"
	"math"
	"net/http"
	"path"
	"sort"
	"strings"

	"github.com/julienschmidt/httprouter"

	"sandfs/core"
	"sandfs/core/pathmatch"
	"sandfs/rest/httpkit"
)

// The AIO listing routes: list, name search (v2 search, v1 find) and
// glob, all one walk (walkListing).

type listOpts struct {
	recursive, hidden, size, perms, desc bool
	maxDepth                             int
	sortBy                               string
	types                                []string
}

// listV2: GET /v2/fs/list?path&recursive&show_hidden&max_depth&
// include_permissions&sort_by&sort_desc.
func (s *Family) listV2(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, p, err := aioPathQuery(r)
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
		if *b.dst, err = httpkit.BoolQuery(q, b.name, b.def, httpkit.AIODialect); err != nil {
			return err
		}
	}
	md, err := httpkit.IntQuery[int](q, "max_depth", httpkit.AIODialect)
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
func (s *Family) listV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
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
func (s *Family) list(w http.ResponseWriter, r *http.Request, p string, o listOpts) error {
	lim := s.files().limits
	less, err := listOrder(o.sortBy)
	if err != nil {
		return httpkit.WithOp("list", err)
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
	res := ListResult{Files: []ListEntry{}}
	res.Path, res.Truncated, err = s.walkListing(w, r, core.OpList, p, wo, lim.List, func(e core.WalkEntry) (bool, error) {
		return len(types) == 0 || e.IsDirLike() || types[strings.ToLower(path.Ext(e.Name))], nil
	}, func(e core.WalkEntry) {
		dir := e.IsDirLike()
		le := ListEntry{Name: e.Name, Path: e.Path, IsDirectory: dir, ModifiedTime: rfc3339(e.ModTime),
			IsHidden: strings.HasPrefix(e.Name, "."), mtime: e.ModTime.UnixNano(), size: e.Size}
		if o.size {
			sz := e.Size
			le.Size = &sz
		}
		if ext := path.Ext(e.Name); !dir && ext != "" && ext != e.Name {
			le.Extension = &ext
		}
		if o.perms {
			ps := httpkit.ModeString(e.Mode)
			le.Permissions = &ps
		}
		res.Files = append(res.Files, le)
		if dir {
			res.DirectoryCount++
		} else {
			res.FileCount++
		}
	})
	if err != nil {
		return err
	}
	sort.SliceStable(res.Files, func(i, j int) bool {
		if o.desc {
			return less(res.Files[j], res.Files[i])
		}
		return less(res.Files[i], res.Files[j])
	})
	res.TotalCount = len(res.Files)
	return writeAIO(w, res)
}

// sortGlob orders glob matches by sortBy (path, name, size, modified),
// ties by path, reversed with desc.
func sortGlob(files []globEntry, sortBy string, desc bool) {
	sort.SliceStable(files, func(i, j int) bool {
		a, b := files[i], files[j]
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
}

// listOrder is the comparison of sort_by: name (default; the path, so a
// recursive listing reads as a tree), size, modified, type (directories
// first, then by extension, then by path).
func listOrder(by string) (func(a, b ListEntry) bool, error) {
	size := func(e ListEntry) int64 { return e.size }
	ext := func(e ListEntry) string {
		if e.Extension == nil {
			return ""
		}
		return *e.Extension
	}
	switch by {
	case "", "name", "path":
		return func(a, b ListEntry) bool { return a.Path < b.Path }, nil
	case "size":
		return func(a, b ListEntry) bool {
			if size(a) != size(b) {
				return size(a) < size(b)
			}
			return a.Path < b.Path
		}, nil
	case "modified", "mtime", "modified_time":
		return func(a, b ListEntry) bool {
			if a.mtime != b.mtime {
				return a.mtime < b.mtime
			}
			return a.Path < b.Path
		}, nil
	case "type":
		return func(a, b ListEntry) bool {
			if a.IsDirectory != b.IsDirectory {
				return a.IsDirectory
			}
			if ext(a) != ext(b) {
				return ext(a) < ext(b)
			}
			return a.Path < b.Path
		}, nil
	}
	return nil, httpkit.InvalidRequest("sort_by must be one of name, size, modified, type; got %q", by)
}

// searchV2: GET /v2/fs/search?path&pattern.
func (s *Family) searchV2(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, p, err := aioPathQuery(r)
	if err != nil {
		return err
	}
	pattern, err := httpkit.RequiredQuery(q, "pattern", httpkit.AIODialect)
	if err != nil {
		return err
	}
	return s.find(w, r, p, pattern)
}

// findV1: POST /v1/file/find {path, glob}.
func (s *Family) findV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
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
func compileGlob(field, pattern string) (*pathmatch.Glob, error) {
	return compileGlobAs(field, pattern, pattern)
}

// compileGlobAs compiles pattern, which sandfs made of the client's typed
// one ("*.go" becomes "**/*.go"); a refusal quotes typed.
func compileGlobAs(field, pattern, typed string) (*pathmatch.Glob, error) {
	g, err := pathmatch.CompileGlob(pattern)
	if err != nil {
		var pe *pathmatch.PatternError
		if errors.As(err, &pe) {
			if pe.Pattern == pattern { // whole, not cut for length
				pe.Pattern = typed
			}
			return nil, httpkit.InvalidRequest("%s: %v", field, err)
		}
		return nil, httpkit.InvalidRequest("%s: bad glob pattern %q", field, typed)
	}
	return g, nil
}

// find lists the paths under the directory p whose name matches pattern: a
// pattern without "/" matches the name at any depth ("*.go" is
// "**/*.go"), one with "/" the path relative to p, "**" spanning any
// number of directories. Files and directories both match; hidden names
// are searched; symlinks are not descended. At most the search limit of
// paths, in walk order (depth first, names in byte order), then truncated.
func (s *Family) find(w http.ResponseWriter, r *http.Request, p, pattern string) error {
	pat := strings.TrimPrefix(pattern, "./")
	if !strings.Contains(strings.Trim(pat, "/"), "/") {
		pat = "**/" + pat
	}
	g, err := compileGlobAs("pattern", pat, pattern)
	if err != nil {
		return httpkit.WithOp("find", err)
	}
	res := FindResult{Files: []string{}}
	res.Path, res.Truncated, err = s.walkListing(w, r, "find", p, core.WalkOptions{MaxDepth: g.MaxDepth()}, s.files().limits.Search,
		func(e core.WalkEntry) (bool, error) { return g.Match(e.Rel), nil },
		func(e core.WalkEntry) { res.Files = append(res.Files, e.Path) })
	if err != nil {
		return err
	}
	return writeAIO(w, res)
}

// globV1: POST /v1/file/glob FileGlobRequest: the paths under path that
// match pattern relative to it (Python glob semantics: "*.py" is the top
// level only, "**/*.py" any depth; hidden names only with include_hidden),
// minus exclude, with metadata, sorted, at most max_results (default 5,000,
// bound 1–50,000) then truncated.
func (s *Family) globV1(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
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
			return httpkit.InvalidField("body.max_results", "greater_than_equal", "Input should be greater than or equal to 1")
		case m > lim.GlobMax:
			return httpkit.InvalidField("body.max_results", "less_than_equal", "Input should be less than or equal to %d", lim.GlobMax)
		default:
			maxRes = m
		}
	}
	g, err := compileGlob("pattern", *req.Pattern)
	if err != nil {
		return httpkit.WithOp("glob", err)
	}
	for _, ex := range req.Exclude {
		if err := pathmatch.CheckGlob(strings.Trim(ex, "/")); err != nil {
			return httpkit.WithOp("glob", httpkit.InvalidRequest("exclude: %v", err))
		}
	}
	sortBy := strOr(req.SortBy, "path")
	switch sortBy {
	case "path", "name", "size", "modified":
	default:
		return httpkit.WithOp("glob", httpkit.InvalidRequest("sort_by must be one of path, name, size, modified; got %q", sortBy))
	}
	filesOnly, meta := boolOr(req.FilesOnly, true), boolOr(req.IncludeMetadata, true)
	res := GlobResult{Pattern: *req.Pattern, Files: []globEntry{}}
	wo := core.WalkOptions{MaxDepth: g.MaxDepth(), NoHidden: !boolOr(req.IncludeHidden, false)}
	desc := boolOr(req.SortDesc, false)
	// The first max_results of the sorted matches, not the first found
	// sorted: the walk goes on (to the visit limit), and what is kept is
	// cut back to the best max_results whenever it reaches twice that.
	cut := false
	res.Path, res.Truncated, err = s.walkListing(w, r, "glob", *req.Path, wo, math.MaxInt, func(e core.WalkEntry) (bool, error) {
		if len(req.Exclude) > 0 && pathmatch.InAnyComponent(e.Rel, req.Exclude) {
			if e.IsDir() {
				return false, fs.SkipDir
			}
			return false, nil
		}
		return !(filesOnly && e.IsDirLike()) && g.Match(e.Rel), nil
	}, func(e core.WalkEntry) {
		dir := e.IsDirLike()
		ge := globEntry{Path: e.Path, Name: e.Name, IsDirectory: dir, size: e.Size, mtime: e.ModTime.UnixNano()}
		if meta {
			sz, mt := e.Size, rfc3339(e.ModTime)
			ge.Size, ge.ModifiedTime = &sz, &mt
		}
		if res.Files = append(res.Files, ge); len(res.Files) >= 2*maxRes {
			sortGlob(res.Files, sortBy, desc)
			res.Files, cut = res.Files[:maxRes], true
		}
	})
	if err != nil {
		return err
	}
	sortGlob(res.Files, sortBy, desc)
	if len(res.Files) > maxRes {
		res.Files, cut = res.Files[:maxRes], true
	}
	res.Truncated = res.Truncated || cut
	res.TotalCount = len(res.Files)
	return writeAIO(w, res)
}

// walkListing is the walk of list, find and glob under the operation op:
// p must be a directory (else ENOTDIR); the walk looks at no more than the
// visit limit of entries and adds at most limit of them, and either bound
// ends it truncated. keep says whether an entry is added (its error may be
// fs.SkipDir, to prune a directory); add takes each entry kept. It returns
// the directory's API path, and sets the skipped-names header when the walk
// succeeds.
func (s *Family) walkListing(w http.ResponseWriter, r *http.Request, op, p string, wo core.WalkOptions, limit int,
	keep func(core.WalkEntry) (bool, error), add func(core.WalkEntry)) (dir string, truncated bool, err error) {
	fsys := s.fileFS(r.Context())
	info, err := fsys.Stat(r.Context(), p)
	if err != nil {
		return "", false, httpkit.WithOp(op, err)
	}
	if !info.IsDir() {
		return "", false, httpkit.WithOp(op, &fs.PathError{Op: op, Path: info.Path, Err: errnoNotDir})
	}
	visit, visited, added := s.files().limits.Visit, 0, 0
	ctx, skipped := core.WithSkippedNames(r.Context())
	err = fsys.Walk(ctx, info.Path, wo, func(e core.WalkEntry) error {
		if visited++; visited > visit {
			truncated = true
			return fs.SkipAll
		}
		if ok, err := keep(e); !ok {
			return err
		}
		if added >= limit {
			truncated = true
			return fs.SkipAll
		}
		added++
		add(e)
		return nil
	})
	if err != nil {
		return "", false, httpkit.WithOp(op, err)
	}
	httpkit.NoteSkipped(w, skipped)
	return info.Path, truncated, nil
}
