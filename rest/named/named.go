package named

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/sys/unix"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/journal"
	"sandfs/core/pathmatch"
	"sandfs/rest/httpkit"
)

// namedFS is what the named-sandbox family (api.md §5) needs from a core
// sandbox.
type namedFS interface {
	CleanIn(workdir, p string) (string, error)
	Lstat(ctx context.Context, p string) (core.Info, error)
	Readlink(ctx context.Context, p string) (string, error)
	List(ctx context.Context, p string, limit int) ([]core.Info, bool, error)
	Walk(ctx context.Context, p string, o core.WalkOptions, fn func(core.WalkEntry) error) error
	OpenFile(ctx context.Context, p string) (*os.File, core.Info, error)
	WriteFile(ctx context.Context, p string, r io.Reader, o core.WriteOptions) (int64, error)
	RemoveWith(ctx context.Context, p string, o core.RemoveOptions) error
	Mkdir(ctx context.Context, p string, parents bool, mode fs.FileMode) error
	Move(ctx context.Context, from, to string, o core.MoveOptions) error
	Copy(ctx context.Context, from, to string, o core.CopyOptions) (core.CopyStats, error)
	PreserveAttrs(ctx context.Context, from, to string) error
	Chmod(ctx context.Context, p string, mode uint32, recursive bool) (core.AttrResult, error)
	Chown(ctx context.Context, p string, uid, gid int, recursive bool) (core.AttrResult, error)
	Journal() *journal.Journal
}

var _ namedFS = (*core.Sandbox)(nil)

// sandbox is the sandbox {name}, which the route wrapper looked up and
// holds for the request (rest/selector.go: an unknown one is 404 ENOENT with
// the name as path before the handler runs).
func (s *Family) sandbox(r *http.Request) namedFS { return s.host.SandboxOf(r.Context()) }

// namedPath resolves a client path against workingDir, which must be
// absolute (default "/").
func namedPath(sb namedFS, workingDir, p string, present bool) (string, error) {
	if !present {
		return "", httpkit.InvalidRequest(`missing required parameter "path"`)
	}
	if workingDir == "" {
		workingDir = "/"
	}
	if !strings.HasPrefix(workingDir, "/") {
		return "", httpkit.InvalidRequest("workingDir must be an absolute path, got %q", workingDir)
	}
	return sb.CleanIn(workingDir, p)
}

// namedQueryPath is namedPath from the query's path and workingDir.
// namedTarget is the start of every route that names one path in its
// query: the sandbox, the query, and the path (def when path is absent and
// def is not "").
func (s *Family) namedTarget(r *http.Request, ps httprouter.Params, def string) (namedFS, url.Values, string, error) {
	sb, q, err := s.namedQuery(r, ps)
	if err != nil {
		return nil, nil, "", err
	}
	if _, ok := q["path"]; !ok && def != "" {
		q.Set("path", def)
	}
	p, err := namedQueryPath(sb, q)
	return sb, q, p, err
}

// namedQuery is the sandbox {name} and the query.
func (s *Family) namedQuery(r *http.Request, ps httprouter.Params) (namedFS, url.Values, error) {
	sb := s.sandbox(r)
	q, err := httpkit.Query(r)
	return sb, q, err
}

func namedQueryPath(sb namedFS, q url.Values) (string, error) {
	_, ok := q["path"]
	return namedPath(sb, q.Get("workingDir"), q.Get("path"), ok)
}

// namedRead: GET /fs/read?path&workingDir — the bytes, streamed, Range.
func (s *Family) namedRead(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb, _, p, err := s.namedTarget(r, ps, "")
	if err != nil {
		return err
	}
	f, info, err := sb.OpenFile(r.Context(), p)
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	return httpkit.ServeContent(w, r, info.ModTime, f)
}

// namedWrite: PUT /fs/write?path&workingDir&mode&mkdir|mkdirParents — the
// body (≤ 16 MiB) replaces the file atomically; If-Match and
// If-None-Match: * are its precondition (httpkit/precondition.go).
func (s *Family) namedWrite(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb, q, p, err := s.namedTarget(r, ps, "")
	if err != nil {
		return err
	}
	var o core.WriteOptions
	if v := q.Get("mode"); v != "" {
		m, err := parseMode("mode", v)
		if err != nil {
			return err
		}
		o.Mode = fs.FileMode(m & 0o777)
		if m&unix.S_ISUID != 0 {
			o.Mode |= fs.ModeSetuid
		}
		if m&unix.S_ISGID != 0 {
			o.Mode |= fs.ModeSetgid
		}
		if m&unix.S_ISVTX != 0 {
			o.Mode |= fs.ModeSticky
		}
	}
	for _, name := range []string{"mkdir", "mkdirParents"} {
		b, err := httpkit.BoolQuery(q, name, false, httpkit.PlainDialect)
		if err != nil {
			return err
		}
		o.MkdirParents = o.MkdirParents || b
	}
	if r.ContentLength > MaxWrite {
		return httpkit.TooLarge("request body of %d bytes is larger than the limit of %d bytes", r.ContentLength, MaxWrite)
	}
	if o.Pre, err = httpkit.ReadPrecondition(r, nil, ""); err != nil {
		return err
	}
	var etag string
	o.ETag = &etag
	if !o.MkdirParents {
		if err := mkdirOne(r.Context(), sb, path.Dir(p)); err != nil {
			return err
		}
	}
	body := &httpkit.BodyReader{R: http.MaxBytesReader(w, r.Body, MaxWrite)}
	n, err := sb.WriteFile(r.Context(), p, body, o)
	if err != nil {
		return body.Blame(err)
	}
	httpkit.SetETag(w, etag)
	out := WriteResponse{Path: p, Size: n, Mode: "0644"}
	if o.Mode != 0 {
		out.Mode = httpkit.ModeString(o.Mode)
	}
	if info, err := sb.Lstat(r.Context(), p); err == nil && !info.IsSymlink() {
		out.Mode = httpkit.ModeString(info.Mode)
	}
	return httpkit.WriteJSON(w, http.StatusOK, out)
}

// mkdirOne makes the directory dir when it is missing and its own parent
// exists (mkdir(2), not mkdir -p): without mkdir/mkdirParents, a write may
// create its immediate parent. The Sprites SDK's mkdir(path) without
// recursive is a write of path/.keep with no flag, then a delete of .keep.
// A deeper missing parent is left for the write to refuse (ENOENT).
func mkdirOne(ctx context.Context, sb namedFS, dir string) error {
	if _, err := sb.Lstat(ctx, dir); !errors.Is(err, fs.ErrNotExist) {
		return nil // there, or a failure the write will report
	}
	if gp, err := sb.Lstat(ctx, path.Dir(dir)); err != nil || !gp.IsDir() {
		return nil
	}
	if err := sb.Mkdir(ctx, dir, false, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// api.List: GET /fs/list?path&workingDir&recursive&pattern — a directory's
// entries (everything under it with recursive), a file as itself; pattern
// is a glob over the name (over the path below path with recursive).
func (s *Family) namedList(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb, q, p, err := s.namedTarget(r, ps, ".")
	if err != nil {
		return err
	}
	recursive, err := httpkit.BoolQuery(q, "recursive", false, httpkit.PlainDialect)
	if err != nil {
		return err
	}
	var g *pathmatch.Glob
	if pat := q.Get("pattern"); pat != "" {
		if g, err = pathmatch.CompileGlob(pat); err != nil {
			var pe *pathmatch.PatternError
			if errors.As(err, &pe) {
				return httpkit.InvalidRequest("pattern: %v", err)
			}
			return httpkit.InvalidRequest("pattern %q is not a valid glob", pat)
		}
	}
	top, err := sb.Lstat(r.Context(), p)
	if err != nil {
		return err
	}
	out := api.List{Path: p, Entries: []api.Entry{}}
	ctx, skipped := core.WithSkippedNames(r.Context())
	switch {
	case !top.IsDir():
		if g == nil || g.Match(top.Name) {
			out.Entries = append(out.Entries, toNamedEntry(top))
		}
	case recursive:
		err = sb.Walk(ctx, p, core.WalkOptions{}, func(e core.WalkEntry) error {
			if g != nil && !g.Match(e.Rel) && !g.Match(e.Name) {
				return nil
			}
			if len(out.Entries) >= maxNamedEntries {
				out.Truncated = true
				return fs.SkipAll
			}
			out.Entries = append(out.Entries, toNamedEntry(e.Info))
			return nil
		})
	default:
		var infos []core.Info
		infos, out.Truncated, err = sb.List(ctx, p, maxNamedEntries)
		for _, in := range infos {
			if g == nil || g.Match(in.Name) {
				out.Entries = append(out.Entries, toNamedEntry(in))
			}
		}
	}
	if err != nil {
		return err
	}
	out.Count = len(out.Entries)
	for i := range out.Entries {
		linkTarget(r.Context(), sb, &out.Entries[i])
	}
	httpkit.NoteSkipped(w, skipped)
	return httpkit.WriteJSON(w, http.StatusOK, out)
}

// linkTarget fills a symlink entry's target (a link gone meanwhile keeps
// none).
func linkTarget(ctx context.Context, sb namedFS, e *api.Entry) {
	if e.Type == "symlink" {
		e.Target, _ = sb.Readlink(ctx, e.Path)
	}
}

// namedStat: GET /fs/stat?path&workingDir — one entry, as in a listing.
func (s *Family) namedStat(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb, _, p, err := s.namedTarget(r, ps, "")
	if err != nil {
		return err
	}
	info, err := sb.Lstat(r.Context(), p)
	if err != nil {
		return err
	}
	out := toNamedEntry(info)
	out.Etag = core.ETag(info)
	linkTarget(r.Context(), sb, &out)
	return httpkit.WriteJSON(w, http.StatusOK, out)
}

// namedDelete: DELETE /fs/delete?path&workingDir&recursive, or the same as
// a JSON body {path, workingDir, recursive, ifMatch}; If-Match too.
func (s *Family) namedDelete(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb, q, err := s.namedQuery(r, ps)
	if err != nil {
		return err
	}
	_, hasPath := q["path"]
	req := DeleteRequest{WorkingDir: q.Get("workingDir")}
	if hasPath {
		v := q.Get("path")
		req.Path = &v
		if req.Recursive, err = httpkit.BoolQuery(q, "recursive", false, httpkit.PlainDialect); err != nil {
			return err
		}
	} else if r.ContentLength != 0 {
		if err := httpkit.DecodeJSON(w, r, s.limits.MaxJSONBody, &req); err != nil {
			return err
		}
	}
	p, err := namedPath(sb, req.WorkingDir, deref(req.Path), req.Path != nil)
	if err != nil {
		return err
	}
	pre, err := httpkit.ReadPrecondition(r, req.IfMatch, "ifMatch")
	if err != nil {
		return err
	}
	if err := sb.RemoveWith(r.Context(), p, core.RemoveOptions{Recursive: req.Recursive, Pre: pre}); err != nil {
		return err
	}
	return httpkit.WriteJSON(w, http.StatusOK, DeleteResponse{Deleted: []string{p}, Count: 1})
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

// namedSourceDest decodes {source, dest, workingDir, …} and resolves both.
func (s *Family) namedSourceDest(w http.ResponseWriter, r *http.Request, sb namedFS) (MoveRequest, string, string, error) {
	var req MoveRequest
	if err := httpkit.DecodeJSON(w, r, s.limits.MaxJSONBody, &req); err != nil {
		return req, "", "", err
	}
	if req.Source == nil {
		return req, "", "", httpkit.InvalidRequest(`missing required field "source"`)
	}
	if req.Dest == nil {
		return req, "", "", httpkit.InvalidRequest(`missing required field "dest"`)
	}
	src, err := namedPath(sb, req.WorkingDir, *req.Source, true)
	if err != nil {
		return req, "", "", err
	}
	dst, err := namedPath(sb, req.WorkingDir, *req.Dest, true)
	return req, src, dst, err
}

// namedRename: POST /fs/rename {source, dest, workingDir, ifMatch} —
// rename(2): an existing destination is replaced; ifMatch (or If-Match) is
// the source's precondition.
func (s *Family) namedRename(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb := s.sandbox(r)
	req, src, dst, err := s.namedSourceDest(w, r, sb)
	if err != nil {
		return err
	}
	pre, err := httpkit.ReadPrecondition(r, req.IfMatch, "ifMatch")
	if err != nil {
		return err
	}
	if err := sb.Move(r.Context(), src, dst, core.MoveOptions{Overwrite: true, Pre: pre}); err != nil {
		return err
	}
	return httpkit.WriteJSON(w, http.StatusOK, MoveResponse{Source: src, Dest: dst})
}

// namedCopy: POST /fs/copy {source, dest, workingDir, recursive,
// preserveAttrs, ifMatch} — cp [-r] [-p]: an existing destination is
// replaced; ifMatch (or If-Match) is the destination's precondition.
func (s *Family) namedCopy(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	sb := s.sandbox(r)
	req, src, dst, err := s.namedSourceDest(w, r, sb)
	if err != nil {
		return err
	}
	info, err := sb.Lstat(r.Context(), src)
	if err != nil {
		return err
	}
	if info.IsDir() && !req.Recursive {
		return &fs.PathError{Op: core.OpCopy, Path: src, Err: unix.EISDIR}
	}
	pre, err := httpkit.ReadPrecondition(r, req.IfMatch, "ifMatch")
	if err != nil {
		return err
	}
	st, err := sb.Copy(r.Context(), src, dst, core.CopyOptions{Overwrite: true, Pre: pre})
	if err != nil {
		return err
	}
	if req.PreserveAttrs {
		if err := sb.PreserveAttrs(r.Context(), src, dst); err != nil {
			return err
		}
	}
	return httpkit.WriteJSON(w, http.StatusOK, CopyResponse{Source: src, Dest: dst, Count: st.Entries, TotalBytes: st.Bytes})
}
