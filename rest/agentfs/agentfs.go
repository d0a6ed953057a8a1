package agentfs

import (
	"context"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/julienschmidt/httprouter"

	"sandfs/api"
	"sandfs/core"
	"sandfs/core/tar"
	"sandfs/rest/httpkit"
)

// agentFS is what the sandbox-agent family needs from core.
type agentFS interface {
	Clean(p string) (string, error)
	Stat(ctx context.Context, p string) (core.Info, error)
	List(ctx context.Context, p string, limit int) ([]core.Info, bool, error)
	OpenFile(ctx context.Context, p string) (*os.File, core.Info, error)
	WriteFile(ctx context.Context, p string, r io.Reader, o core.WriteOptions) (int64, error)
	RemoveWith(ctx context.Context, p string, o core.RemoveOptions) error
	Mkdir(ctx context.Context, p string, parents bool, mode fs.FileMode) error
	Move(ctx context.Context, from, to string, o core.MoveOptions) error
}

var _ agentFS = (*core.Sandbox)(nil)

func (s *Family) agentFS(ctx context.Context) agentFS { return s.host.SandboxOf(ctx) }

// MaxEntries caps GET /v1/fs/entries (api.md §1 list limit). The
// seed's answer is a bare array, so a cut listing says so in a header. A
// variable only so that a test can lower it.
var MaxEntries = 10_000

const (
	HeaderTruncated = "X-Sandfs-Truncated"
	// maxUploadPaths caps the paths list of upload-batch (the sandbox-agent spec).
	maxUploadPaths = 1024
)

// fsEntries: GET /v1/fs/entries?path — the entries of a directory.
func (s *Family) fsEntries(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	ctx, skipped := core.WithSkippedNames(r.Context())
	infos, truncated, err := s.agentFS(ctx).List(ctx, optionalPath(q, "."), MaxEntries)
	if err != nil {
		return err
	}
	httpkit.NoteSkipped(w, skipped)
	out := make([]api.FSEntry, len(infos))
	for i, in := range infos {
		out[i] = agentEntry(in)
	}
	if truncated {
		w.Header().Set(HeaderTruncated, "true")
	}
	return httpkit.WriteJSON(w, http.StatusOK, out)
}

// fsReadFile: GET /v1/fs/file?path — the bytes, with Range and
// conditional requests, sent with sendfile.
func (s *Family) fsReadFile(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	p, err := pathQuery(r)
	if err != nil {
		return err
	}
	f, info, err := s.agentFS(r.Context()).OpenFile(r.Context(), p)
	if err != nil {
		return err
	}
	defer f.Close()
	w.Header()["Content-Type"] = ctOctet
	if serveSmall(w, r, f, info.Size, info.ModTime) {
		return nil
	}
	return httpkit.ServeContent(w, r, info.ModTime, f)
}

// fsWriteFile: PUT /v1/fs/file?path — body streamed into the file,
// replacing it atomically; missing parents are created. If-Match and
// If-None-Match: * are its precondition (httpkit/precondition.go).
func (s *Family) fsWriteFile(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	p, err := s.cleanRequired(r.Context(), q)
	if err != nil {
		return err
	}
	pre, err := httpkit.ReadPrecondition(r, nil, "")
	if err != nil {
		return err
	}
	var etag string
	body := &httpkit.BodyReader{R: r.Body}
	n, err := s.agentFS(r.Context()).WriteFile(r.Context(), p, body, core.WriteOptions{MkdirParents: true, Pre: pre, ETag: &etag})
	if err != nil {
		return body.Blame(err)
	}
	httpkit.SetETag(w, etag)
	return httpkit.WriteJSON(w, http.StatusOK, api.FSWrite{Path: p, BytesWritten: uint64(n)})
}

// fsDeleteEntry: DELETE /v1/fs/entry?path&recursive — remove a file, a
// symlink, or a directory (non-empty only with recursive=true).
func (s *Family) fsDeleteEntry(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	p, err := s.cleanRequired(r.Context(), q)
	if err != nil {
		return err
	}
	recursive, err := httpkit.BoolQuery(q, "recursive", false, httpkit.PlainDialect)
	if err != nil {
		return err
	}
	pre, err := httpkit.ReadPrecondition(r, nil, "")
	if err != nil {
		return err
	}
	if err := s.agentFS(r.Context()).RemoveWith(r.Context(), p, core.RemoveOptions{Recursive: recursive, Pre: pre}); err != nil {
		return err
	}
	return httpkit.WriteJSON(w, http.StatusOK, api.FSAction{Path: p})
}

// fsMkdir: POST /v1/fs/mkdir?path — mkdir -p.
func (s *Family) fsMkdir(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	p, err := s.cleanRequired(r.Context(), q)
	if err != nil {
		return err
	}
	if err := s.agentFS(r.Context()).Mkdir(r.Context(), p, true, 0o755); err != nil {
		return err
	}
	return httpkit.WriteJSON(w, http.StatusOK, api.FSAction{Path: p})
}

// fsMove: POST /v1/fs/move {from, to, overwrite} — rename; the
// destination's parents are created; an existing destination needs overwrite.
func (s *Family) fsMove(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if _, err := httpkit.Query(r); err != nil {
		return err
	}
	var req api.FSMoveRequest
	if err := httpkit.DecodeJSON(w, r, s.limits.MaxJSONBody, &req); err != nil {
		return err
	}
	if req.From == nil {
		return httpkit.InvalidRequest(`missing required field "from"`)
	}
	if req.To == nil {
		return httpkit.InvalidRequest(`missing required field "to"`)
	}
	from, err := s.agentFS(r.Context()).Clean(*req.From)
	if err != nil {
		return err
	}
	to, err := s.agentFS(r.Context()).Clean(*req.To)
	if err != nil {
		return err
	}
	pre, err := httpkit.ReadPrecondition(r, nil, "")
	if err != nil {
		return err
	}
	o := core.MoveOptions{Overwrite: req.Overwrite != nil && *req.Overwrite, MkdirParents: true, Pre: pre}
	if err := s.agentFS(r.Context()).Move(r.Context(), from, to, o); err != nil {
		return err
	}
	return httpkit.WriteJSON(w, http.StatusOK, api.FSMove{From: from, To: to})
}

// fsStat: GET /v1/fs/stat?path — metadata, following a final symlink.
func (s *Family) fsStat(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	p, err := pathQuery(r)
	if err != nil {
		return err
	}
	info, err := s.agentFS(r.Context()).Stat(r.Context(), p)
	if err != nil {
		return err
	}
	// agentStat(info), encoded without reflection (fastjson.go).
	writeStat(w, info)
	return nil
}

// fsUploadBatch: POST /v1/fs/upload-batch?path — extract an uncompressed
// tar into the directory path (created if missing), merging.
func (s *Family) fsUploadBatch(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(strings.ToLower(ct), "application/x-tar") {
		return httpkit.UnsupportedMedia("content-type must be application/x-tar, got %q", ct)
	}
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	if r.ContentLength > s.limits.MaxTarBody {
		return httpkit.TooLarge("request body of %d bytes is larger than the limit of %d bytes", r.ContentLength, s.limits.MaxTarBody)
	}
	body := &httpkit.BodyReader{R: http.MaxBytesReader(w, r.Body, s.limits.MaxTarBody)}
	res, err := tar.Extract(r.Context(), s.host.SandboxOf(r.Context()), optionalPath(q, "."), body,
		tar.Options{Mode: tar.Merge, MaxPaths: maxUploadPaths})
	if err != nil {
		return body.Blame(err)
	}
	paths, skipped := httpkit.ReportablePaths(res.Paths)
	httpkit.NoteSkipped(w, skipped)
	return httpkit.WriteJSON(w, http.StatusOK, api.FSUploadBatch{Paths: paths, Truncated: res.Truncated || res.Entries > len(res.Paths)})
}

// cleanRequired is the required query parameter path made an API path, for
// the answers that echo the path the operation acted on.
func (s *Family) cleanRequired(ctx context.Context, q url.Values) (string, error) {
	p, err := httpkit.RequiredQuery(q, "path", httpkit.PlainDialect)
	if err != nil {
		return "", err
	}
	return s.agentFS(ctx).Clean(p)
}

// optionalPath returns the query parameter path, or def when it is absent
// or empty.
func optionalPath(q url.Values, def string) string {
	if p := q.Get("path"); p != "" {
		return p
	}
	return def
}
