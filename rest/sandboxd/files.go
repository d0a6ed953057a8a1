package sandboxd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"

	"sandfs/core"
	"sandfs/rest/httpkit"
)

// filesFS is what the family needs from core.
type filesFS interface {
	Clean(p string) (string, error)
	Stat(ctx context.Context, p string) (core.Info, error)
	List(ctx context.Context, p string, limit int) ([]core.Info, bool, error)
	OpenFile(ctx context.Context, p string) (*os.File, core.Info, error)
	WriteFile(ctx context.Context, p string, r io.Reader, o core.WriteOptions) (int64, error)
	Chmod(ctx context.Context, p string, mode uint32, recursive bool) (core.AttrResult, error)
	RemoveWith(ctx context.Context, p string, o core.RemoveOptions) error
}

var _ filesFS = (*core.Sandbox)(nil)

func (f *Family) fs(ctx context.Context) filesFS { return f.host.SandboxOf(ctx) }

// MaxEntries caps a directory listing. The standard's listing has no field
// to say it was cut, so a cut one says it in the header X-Sandfs-Truncated.
// A variable only so that a test can lower it.
var MaxEntries = 10_000

// HeaderTruncated marks a listing cut at MaxEntries.
const HeaderTruncated = "X-Sandfs-Truncated"

// modePattern is the standard's pattern of PUT's mode.
var modePattern = regexp.MustCompile(`^0[0-7]{3}$`)

// defaultMode is PUT's mode when the query names none: the standard's
// default, applied to an existing file as to a new one.
const defaultMode = 0o644

// errEscapes is the standard's answer to a path climbing out of the root.
var errEscapes = &httpkit.RequestError{Kind: httpkit.KindPermissionDenied, Status: http.StatusForbidden,
	Msg: "path traversal outside the sandbox root is forbidden"}

// apiPath is the route's path parameter as an API path. The parameter is
// relative to the sandbox root (it always starts with the "/" the route
// leaves on it); a ".." that climbs above the root is the standard's 403.
func (f *Family) apiPath(ctx context.Context, ps httprouter.Params) (string, error) {
	return f.cleanPath(ctx, ps.ByName("path"))
}

// cleanPath is p, relative to the sandbox root, as an API path: a ".."
// that climbs above the root is the standard's 403.
func (f *Family) cleanPath(ctx context.Context, p string) (string, error) {
	if escapes(p) {
		return "", errEscapes // first: a climbing path is the standard's 403, whatever its names
	}
	if !utf8.ValidString(p) {
		return "", httpkit.ErrNotUTF8 // httpkit/names.go: such a name would reach a client as another's
	}
	return f.fs(ctx).Clean("/" + strings.TrimLeft(p, "/"))
}

// escapes reports whether p's ".." segments climb above the directory p is
// relative to.
func escapes(p string) bool {
	depth := 0
	for _, seg := range strings.Split(p, "/") {
		switch seg {
		case "", ".":
		case "..":
			if depth--; depth < 0 {
				return true
			}
		default:
			depth++
		}
	}
	return false
}

// get: GET and HEAD /v1/files/*path — the file's bytes, or the directory's
// listing; the path is followed through a final symlink within the root.
func (f *Family) get(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	ctx := r.Context()
	p, err := f.apiPath(ctx, ps)
	if err != nil {
		return err
	}
	info, err := f.fs(ctx).Stat(ctx, p)
	if err != nil {
		return err
	}
	if info.IsDir() {
		return f.list(w, r, p)
	}
	file, info, err := f.fs(ctx).OpenFile(ctx, p)
	if err != nil {
		return err
	}
	defer file.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	return httpkit.ServeContent(w, r, info.ModTime, file)
}

// DirectoryListing is the standard's answer for a directory.
type DirectoryListing struct {
	Path    string      `json:"path"`
	Entries []FileEntry `json:"entries"`
}

// FileEntry is one entry of a listing: type is "file" or "directory" (a
// symlink is described as what it resolves to), mode the permission bits
// in octal ("0644").
type FileEntry struct {
	Name       string `json:"name"`
	Size       int64  `json:"size"`
	Type       string `json:"type"`
	ModifiedAt string `json:"modified_at"`
	Mode       string `json:"mode,omitempty"`
}

// list answers a directory: its entries sorted by name, at most
// MaxEntries. A symlink that resolves to nothing (within the root) is left
// out, as the reference daemon leaves out a broken or escaping link. HEAD
// gets the headers only: the listing is not made.
func (f *Family) list(w http.ResponseWriter, r *http.Request, p string) error {
	if r.Method == http.MethodHead {
		w.Header().Set("Content-Type", httpkit.JSONContentType[0])
		w.WriteHeader(http.StatusOK)
		return nil
	}
	ctx, skipped := core.WithSkippedNames(r.Context())
	infos, truncated, err := f.fs(ctx).List(ctx, p, MaxEntries)
	if err != nil {
		return err
	}
	out := DirectoryListing{Path: p, Entries: make([]FileEntry, 0, len(infos))}
	for _, in := range infos {
		if in.IsSymlink() {
			if in, err = f.fs(ctx).Stat(ctx, in.Path); err != nil {
				continue
			}
		}
		out.Entries = append(out.Entries, entryOf(in))
	}
	httpkit.NoteSkipped(w, skipped)
	if truncated {
		w.Header().Set(HeaderTruncated, "true")
	}
	return httpkit.WriteJSON(w, http.StatusOK, out)
}

func entryOf(in core.Info) FileEntry {
	typ := "file"
	if in.IsDir() {
		typ = "directory"
	}
	return FileEntry{
		Name:       in.Name, // a symlink's own name: Stat names the link's path
		Size:       in.Size,
		Type:       typ,
		ModifiedAt: in.ModTime.UTC().Format(time.RFC3339),
		Mode:       fmt.Sprintf("%04o", in.Mode.Perm()),
	}
}

// put: PUT /v1/files/*path?mode — the body, or the "file" part of a
// multipart/form-data body, replaces the file atomically (core.WriteFile:
// temp file, fsync, rename); missing parents are created. If-Match and
// If-None-Match: * are a precondition, as on the other families' writes.
func (f *Family) put(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	mode := fs.FileMode(defaultMode)
	if q.Has("mode") {
		v := q.Get("mode")
		if !modePattern.MatchString(v) {
			return httpkit.InvalidRequest("mode %q must match ^0[0-7]{3}$", v)
		}
		m, _ := strconv.ParseUint(v, 8, 32)
		mode = fs.FileMode(m)
	}
	ctx := r.Context()
	p, err := f.apiPath(ctx, ps)
	if err != nil {
		return err
	}
	pre, err := httpkit.ReadPrecondition(r, nil, "")
	if err != nil {
		return err
	}
	if r.ContentLength > f.limits.MaxTarBody {
		return httpkit.TooLarge("request body of %d bytes is larger than the limit of %d bytes", r.ContentLength, f.limits.MaxTarBody)
	}
	src, err := fileBody(r, http.MaxBytesReader(w, r.Body, f.limits.MaxTarBody))
	if err != nil {
		return err
	}
	var etag string
	body := &httpkit.BodyReader{R: src}
	// core takes mode 0 for "no mode": 0000 is set after the write.
	if _, err := f.fs(ctx).WriteFile(ctx, p, body, core.WriteOptions{MkdirParents: true, Mode: mode, Pre: pre, ETag: &etag}); err != nil {
		return body.Blame(err)
	}
	if mode == 0 {
		if _, err := f.fs(ctx).Chmod(ctx, p, 0, false); err != nil {
			return err
		}
	}
	httpkit.SetETag(w, etag)
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// fileBody is the file's bytes in body: the "file" part of a
// multipart/form-data body (the parts before it are skipped, read through
// the same limit), else the body itself, whatever its media type (curl
// --data-binary says application/x-www-form-urlencoded).
func fileBody(r *http.Request, body io.Reader) (io.Reader, error) {
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" {
		return body, nil
	}
	if params["boundary"] == "" {
		return nil, httpkit.InvalidRequest("multipart/form-data body without a boundary")
	}
	mr := multipart.NewReader(body, params["boundary"])
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			return nil, httpkit.InvalidRequest(`multipart body is missing the required "file" part`)
		}
		if err != nil {
			return nil, &httpkit.BodyError{Err: err}
		}
		if part.FormName() == "file" {
			return part, nil
		}
		if _, err := io.Copy(io.Discard, part); err != nil {
			return nil, &httpkit.BodyError{Err: err}
		}
	}
}

// delete: DELETE /v1/files/*path?recursive — remove a file, a symlink
// (never followed) or a directory (non-empty only with recursive=true, else
// 409). The root is emptied with recursive=true, never removed: it is the
// sandbox; without recursive it is 409, as in the reference daemon.
func (f *Family) delete(w http.ResponseWriter, r *http.Request, ps httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	recursive, err := httpkit.BoolQuery(q, "recursive", false, httpkit.PlainDialect)
	if err != nil {
		return err
	}
	ctx := r.Context()
	p, err := f.apiPath(ctx, ps)
	if err != nil {
		return err
	}
	pre, err := httpkit.ReadPrecondition(r, nil, "")
	if err != nil {
		return err
	}
	if p == "/" {
		if !recursive {
			return &httpkit.RequestError{Kind: httpkit.KindInvalidTarget, Status: http.StatusConflict,
				Msg: "the sandbox root cannot be removed; recursive=true empties it"}
		}
		err = f.empty(ctx)
	} else {
		err = f.fs(ctx).RemoveWith(ctx, p, core.RemoveOptions{Recursive: recursive, Pre: pre})
	}
	if err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// empty removes everything in the root, a batch of entries at a time. An
// entry that is already gone (removed meanwhile) is no failure.
func (f *Family) empty(ctx context.Context) error {
	sb := f.fs(ctx)
	for {
		infos, truncated, err := sb.List(ctx, "/", MaxEntries)
		if err != nil {
			return err
		}
		for _, in := range infos {
			if err := sb.RemoveWith(ctx, in.Path, core.RemoveOptions{Recursive: true}); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if !truncated {
			return nil
		}
	}
}
