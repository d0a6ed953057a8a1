package aio

import (
	"bufio"
	"context"
	"errors"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"os"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/julienschmidt/httprouter"
	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/precond"
	"sandfs/core/tar"
	"sandfs/rest/httpkit"
)

// AIO transfer (api.md §4 upload, download and tree rows; the AIO spec
// "Transfer"): multipart upload spooled beside its target, streamed
// download with ranges and change_policy, and a directory as a tar stream
// both ways. Bodies are streamed end to end: nothing here holds a file.

// transferFS is what the transfer routes need from core.
type transferFS interface {
	Clean(p string) (string, error)
	Stat(ctx context.Context, p string) (core.Info, error)
	OpenFile(ctx context.Context, p string) (*os.File, core.Info, error)
	Upload(ctx context.Context, p string, r io.Reader, o core.UploadOptions) (string, int64, error)
}

var _ transferFS = (*core.Sandbox)(nil)

func (s *Family) transferFS(ctx context.Context) transferFS { return s.host.SandboxOf(ctx) }

// uploadResult is the 1.x FileUploadResult (v2 answers the same).
type uploadResult struct {
	FilePath string `json:"file_path"`
	FileSize int64  `json:"file_size"`
	Success  bool   `json:"success"`
}

// treeResult answers PUT /v2/fs/tree.
type treeResult struct {
	Path    string `json:"path"`
	Entries int    `json:"entries"`
	Mode    string `json:"mode"`
}

// MaxFormField bounds a text field of an upload form (path, user);
// uploadBuffer is the read buffer of one upload.
const (
	MaxFormField = 64 << 10
	uploadBuffer = 1 << 20
)

// upload: POST /v2/fs/upload, POST /v1/file/upload — multipart/form-data
// with the file in part "file" and the target in field "path" (or the
// query parameter path). The form is read part by part with a
// multipart.Reader, never parsed into memory, and the file part streams
// into core.Upload (.sandfs-upload-<id>.part beside the target, fsync,
// rename). A path that is an existing directory or ends in "/" receives the
// file under its uploaded name; no path at all puts it in the working
// directory under that name. The fields ("path", "user", "expected_etag",
// a precondition: httpkit/precondition.go) may come in any order, as the 1.x
// server takes them: a file part that comes before any path (none in the
// query either) is spooled first (upload_spool.go), and uploaded once
// the form has been read.
func (s *Family) upload(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	mt, params, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/form-data" || params["boundary"] == "" {
		return httpkit.WithOp("upload", httpkit.UnsupportedMedia("want a multipart/form-data body with a boundary and a \"file\" part, got %q", r.Header.Get("Content-Type")))
	}
	// One 1 MiB buffer under the parser (multipart.NewReader keeps a
	// bufio.Reader this large as it is): the part scans for its boundary a
	// MiB at a time instead of 4 KiB, and the body is read in large reads.
	mr := multipart.NewReader(bufio.NewReaderSize(r.Body, uploadBuffer), params["boundary"])
	f := uploadForm{target: q.Get("path"), user: q.Get("user"), targetSet: q.Has("path")}
	defer f.close()
	for {
		part, err := mr.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return httpkit.WithOp("upload", &httpkit.BodyError{Err: err})
		}
		err = s.uploadPart(w, r, &f, part)
		part.Close()
		if err != nil {
			return err
		}
	}
	if f.spool != nil {
		if err := s.uploadFrom(w, r, &f, f.spool); err != nil {
			return err
		}
	}
	if f.res == nil {
		return httpkit.InvalidField("body.file", "missing", "Field required")
	}
	return writeAIO(w, f.res)
}

// uploadForm is what an upload's form said so far.
type uploadForm struct {
	target, user string
	targetSet    bool // a path was given (query or field)
	expected     *string
	filename     string
	spool        *spool // the file part, when it came before any path
	res          *uploadResult
}

func (f *uploadForm) close() {
	if f.spool != nil {
		f.spool.close()
	}
}

// uploadPart takes one part of an upload's form.
func (s *Family) uploadPart(w http.ResponseWriter, r *http.Request, f *uploadForm, part *multipart.Part) error {
	switch part.FormName() {
	case "path", "user", "expected_etag":
		b, err := io.ReadAll(io.LimitReader(part, MaxFormField+1))
		if err != nil {
			return httpkit.WithOp("upload", &httpkit.BodyError{Err: err})
		}
		if len(b) > MaxFormField {
			return httpkit.TooLarge("form field %q is larger than %d bytes", part.FormName(), MaxFormField)
		}
		if f.res != nil {
			// The file streamed already, to the path the query named.
			return httpkit.InvalidField("body."+part.FormName(), "value_error", "Field %q must come before the \"file\" part when the query names the path", part.FormName())
		}
		switch v := string(b); part.FormName() {
		case "path":
			f.target, f.targetSet = v, true
		case "user":
			f.user = v
		default:
			f.expected = &v
		}
	case "file":
		if f.res != nil || f.spool != nil {
			return httpkit.InvalidField("body.file", "value_error", "Only one \"file\" part is allowed")
		}
		f.filename = part.FileName()
		if !f.targetSet {
			sp, err := spoolPart(part, s.limits.MaxTarBody)
			if err != nil {
				return httpkit.WithOp("upload", err)
			}
			f.spool = sp
			return nil
		}
		return s.uploadFrom(w, r, f, part)
	default:
		io.Copy(io.Discard, part) // unknown fields are ignored, as pydantic does
	}
	return nil
}

// uploadFrom uploads the file's bytes from src to the target the form names.
func (s *Family) uploadFrom(w http.ResponseWriter, r *http.Request, f *uploadForm, src io.Reader) error {
	dest, err := s.uploadTarget(r.Context(), f.target, f.filename)
	if err == nil && !utf8.ValidString(dest) {
		err = httpkit.ErrNotUTF8 // httpkit/names.go
	}
	if err != nil {
		return httpkit.WithOp("upload", err)
	}
	ctx, err := withOwner(r.Context(), f.user)
	if err != nil {
		return httpkit.WithOp("upload", err)
	}
	o := core.UploadOptions{ETag: new(string)}
	if o.Pre, err = httpkit.ReadPrecondition(r, f.expected, "expected_etag"); err != nil {
		return httpkit.WithOp("upload", err)
	}
	body := &httpkit.BodyReader{R: src}
	ap, n, err := s.transferFS(ctx).Upload(ctx, dest, body, o)
	if err != nil {
		return httpkit.WithOp("upload", body.Blame(err))
	}
	httpkit.SetETag(w, *o.ETag)
	f.res = &uploadResult{FilePath: ap, FileSize: n, Success: true}
	return nil
}

// uploadTarget decides the file an upload lands in.
func (s *Family) uploadTarget(ctx context.Context, target, filename string) (string, error) {
	base := path.Base(strings.ReplaceAll(filename, "\\", "/"))
	named := func(dir string) (string, error) {
		if base == "" || base == "." || base == ".." || base == "/" {
			return "", httpkit.InvalidRequest("the upload names no file (no path, and the file part has no filename)")
		}
		return s.fileFS(ctx).Clean(path.Join(dir, base))
	}
	if target == "" {
		return named(".")
	}
	ap, err := s.fileFS(ctx).Clean(target)
	if err != nil {
		return "", err
	}
	if strings.HasSuffix(target, "/") {
		return named(ap)
	}
	if info, err := s.transferFS(ctx).Stat(ctx, ap); err == nil && info.IsDir() {
		return named(ap)
	}
	return ap, nil
}

// errFileChanged is change_policy=abort's 409.
var errFileChanged = &httpkit.RequestError{Kind: httpkit.KindFileChanged, Status: http.StatusConflict, Msg: "the file changed since the ETag given in If-Match"}

// download: GET/HEAD /v2/fs/download, GET /v1/file/download
// ?path&change_policy — the bytes, streamed: with change_policy=ignore (the
// default) straight from the file with sendfile, else through a reader that
// re-checks the file every MiB and cuts the connection when it changed.
// http.ServeContent answers Range (206, 416), HEAD and the conditional
// headers (If-None-Match 304; If-Match 412 under ignore). Failures use the
// v2 statuses on both versions (a missing file is 404 even on v1).
func (s *Family) download(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	if _, ok := q["path"]; !ok {
		return httpkit.InvalidField("query.path", "missing", "Field required")
	}
	policy := q.Get("change_policy")
	switch policy {
	case "":
		policy = "ignore"
	case "ignore", "abort":
	default:
		return httpkit.InvalidField("query.change_policy", "enum", "Input should be 'ignore' or 'abort'")
	}
	fs := s.transferFS(r.Context())
	f, info, err := fs.OpenFile(r.Context(), q.Get("path"))
	if err != nil {
		return httpkit.WithOp("download", err)
	}
	defer f.Close()
	etag := core.ETag(info)
	h := w.Header()
	h.Set("ETag", etag)
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": info.Name}))
	if policy == "ignore" {
		return downloadRefused(h, httpkit.ServeContent(w, r, info.ModTime, f))
	}
	if im := r.Header.Get("If-Match"); im != "" && !(precond.Precondition{IfMatch: httpkit.ETagList(im)}).Holds(etag) {
		h.Del("ETag")
		h.Del("Content-Disposition")
		return httpkit.WithOp("download", errFileChanged)
	}
	pf := &pinnedFile{f: f, pinned: info, recheck: func() (core.Info, error) { return fs.Stat(r.Context(), info.Path) }}
	if pf.changed() {
		h.Del("ETag")
		h.Del("Content-Disposition")
		return httpkit.WithOp("download", errFileChanged)
	}
	err = httpkit.ServeContent(w, r, info.ModTime, pf)
	if pf.cut {
		// Too late for a status: cut the connection so the client sees a
		// short body, never a whole-looking mix of two versions.
		panic(http.ErrAbortHandler)
	}
	return downloadRefused(h, err)
}

// downloadRefused drops the attachment header from a refused download (a
// range it cannot serve, a failed precondition): the answer is the error.
func downloadRefused(h http.Header, err error) error {
	if err != nil {
		h.Del("Content-Disposition")
		return httpkit.WithOp("download", err)
	}
	return nil
}

// pinnedCheckEvery is how many bytes pinnedFile reads between checks.
const pinnedCheckEvery = 1 << 20

// errPinnedChanged ends a change_policy=abort transfer.
var errPinnedChanged = errors.New("file changed during the transfer")

// pinnedFile is the file as it was at open: every pinnedCheckEvery bytes,
// and at the end, it fstat's the open file and re-resolves the path, and
// fails the read when the size, the mtime or the inode at the path moved.
type pinnedFile struct {
	f       *os.File
	pinned  core.Info
	recheck func() (core.Info, error)
	since   int64
	cut     bool
}

func (p *pinnedFile) changed() bool {
	var st unix.Stat_t
	if err := unix.Fstat(int(p.f.Fd()), &st); err != nil {
		return true
	}
	if st.Size != p.pinned.Size || time.Unix(st.Mtim.Unix()) != p.pinned.ModTime {
		return true
	}
	now, err := p.recheck()
	return err != nil || now.Inode != p.pinned.Inode || now.Size != p.pinned.Size || !now.ModTime.Equal(p.pinned.ModTime)
}

func (p *pinnedFile) Read(b []byte) (int, error) {
	if p.cut {
		return 0, errPinnedChanged
	}
	if p.since >= pinnedCheckEvery {
		p.since = 0
		if p.changed() {
			p.cut = true
			return 0, errPinnedChanged
		}
	}
	n, err := p.f.Read(b)
	p.since += int64(n)
	if err == io.EOF && p.changed() {
		p.cut = true
		return n, errPinnedChanged
	}
	return n, err
}

func (p *pinnedFile) Seek(off int64, whence int) (int64, error) { return p.f.Seek(off, whence) }

// treeGet: GET /v2/fs/tree?path — the directory as an uncompressed tar
// stream (tar.Write), streamed as it is walked. A failure after the
// first byte cuts the connection.
func (s *Family) treeGet(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	if _, ok := q["path"]; !ok {
		return httpkit.InvalidField("query.path", "missing", "Field required")
	}
	fs := s.transferFS(r.Context())
	info, err := fs.Stat(r.Context(), q.Get("path"))
	if err != nil {
		return httpkit.WithOp("tree", err)
	}
	if !info.IsDir() {
		return httpkit.WithOp("tree", &os.PathError{Op: tar.OpTar, Path: info.Path, Err: unix.ENOTDIR})
	}
	cw := &startWriter{w: w, start: func() {
		h := w.Header()
		h.Set("Content-Type", "application/x-tar")
		name := info.Name
		if name == "/" {
			name = "root"
		}
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name + ".tar"}))
		w.WriteHeader(http.StatusOK)
	}}
	if err := tar.Write(r.Context(), s.host.SandboxOf(r.Context()), info.Path, cw); err != nil {
		if !cw.started {
			return httpkit.WithOp("tree", err)
		}
		panic(http.ErrAbortHandler)
	}
	return nil
}

// startWriter calls start before its first byte.
type startWriter struct {
	w       io.Writer
	start   func()
	started bool
}

func (c *startWriter) Write(b []byte) (int, error) {
	if !c.started {
		c.started = true
		c.start()
	}
	return c.w.Write(b)
}

// treePut: PUT /v2/fs/tree?path&mode&user — extract an uncompressed tar
// into the directory path with tar.Extract, under upload-batch's safety
// rules (a hostile entry refuses the whole archive, nothing written).
// mode=merge (the default) merges into an existing directory; mode=rename
// builds the tree beside and renames it in, so the directory must not exist
// (409). Content-Type must be application/x-tar, application/octet-stream
// or absent (415 otherwise); bodies over the tar limit are 413.
func (s *Family) treePut(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	q, err := httpkit.Query(r)
	if err != nil {
		return err
	}
	if _, ok := q["path"]; !ok {
		return httpkit.InvalidField("query.path", "missing", "Field required")
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, _ := mime.ParseMediaType(ct)
		if mt != "application/x-tar" && mt != "application/octet-stream" {
			return httpkit.WithOp("tree", httpkit.UnsupportedMedia("content-type must be application/x-tar, got %q", ct))
		}
	}
	mode := q.Get("mode")
	var tm tar.Mode
	switch mode {
	case "", "merge":
		mode, tm = "merge", tar.Merge
	case "rename":
		tm = tar.Rename
	default:
		return httpkit.InvalidField("query.mode", "enum", "Input should be 'rename' or 'merge'")
	}
	if r.ContentLength > s.limits.MaxTarBody {
		return httpkit.TooLarge("request body of %d bytes is larger than the limit of %d bytes", r.ContentLength, s.limits.MaxTarBody)
	}
	ctx, err := withOwner(r.Context(), q.Get("user"))
	if err != nil {
		return httpkit.WithOp("tree", err)
	}
	body := &httpkit.BodyReader{R: http.MaxBytesReader(w, r.Body, s.limits.MaxTarBody)}
	res, err := tar.Extract(ctx, s.host.SandboxOf(ctx), q.Get("path"), body, tar.Options{Mode: tm, MaxPaths: 1})
	if err != nil {
		return httpkit.WithOp("tree", body.Blame(err))
	}
	p, _ := s.fileFS(ctx).Clean(q.Get("path"))
	return writeAIO(w, treeResult{Path: p, Entries: res.Entries, Mode: mode})
}
