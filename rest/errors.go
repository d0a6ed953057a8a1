package rest

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"strings"
	"unicode/utf8"

	"golang.org/x/sys/unix"

	"sandfs/core"
	"sandfs/core/changes"
	"sandfs/core/checkpoint"
	"sandfs/core/journal"
	coretar "sandfs/core/tar"
)

// kind names what went wrong, as api.md §2's error_type. Every family
// renders a kind in its own shape; the kind and the status are decided once,
// here, for all of them.
type kind string

const (
	// Filesystem kinds (from the errno core returns).
	kindNotFound         kind = "not_found"
	kindPermissionDenied kind = "permission_denied"
	kindAlreadyExists    kind = "already_exists"
	kindInvalidTarget    kind = "invalid_target"
	kindInvalidPath      kind = "invalid_path"
	kindReadOnly         kind = "read_only_filesystem"
	kindNoSpace          kind = "no_space_left"
	kindTooLarge         kind = "file_too_large"
	kindDecode           kind = "decode_error"
	kindIO               kind = "io_error"

	// Request kinds (the boundary refuses before or around the core call).
	kindInvalidRequest   kind = "invalid_request"
	kindUnsupportedMedia kind = "unsupported_media_type"
	kindUnauthorized     kind = "unauthorized"
	kindRouteNotFound    kind = "route_not_found"
	kindMethodNotAllowed kind = "method_not_allowed"
	kindValidation       kind = "validation_error"     // AIO: malformed JSON, missing field, wrong type (422)
	kindCrossOrigin      kind = "cross_origin_refused" // a page of another origin (403, browser.go)
	kindMisdirected      kind = "misdirected_request"  // a Host this daemon does not answer for (421, browser.go)
	kindHeaderTooLarge   kind = "header_too_large"     // request line and headers over the limit (431, preroute.go)

	// Watch lifecycle kinds (api.md §4: 404 unknown watcher, 429, 503).
	kindTooManyWatchers kind = "too_many_watchers"
	kindTimeout         kind = "timeout"

	// The durable journal cannot answer (503, /health says why).
	kindJournalUnavailable kind = "journal_unavailable"

	// Download under change_policy=abort: the file is not the one the
	// client's If-Match names (409).
	kindFileChanged kind = "file_changed"

	// A write, edit, move or delete whose precondition (If-Match,
	// If-None-Match: *, expected_etag, ifMatch) the target does not meet
	// (412); errKind.ETag is the target's ETag now.
	kindPreconditionFailed kind = "precondition_failed"
)

// errKind is an error classified: everything a family renderer needs, and
// nothing a client must not see.
type errKind struct {
	Kind     kind
	Status   int
	Errno    unix.Errno   // 0 when the error carried none
	Op       string       // core op (core.OpStat, …), "" when none
	Path     string       // API path, "" when none
	Detail   string       // safe for a client: API paths only, no panic, no host path
	Internal bool         // unknown error: the full error goes to the log, Detail is generic
	Fields   []fieldError // kindValidation: what is wrong, field by field
	Expected bool         // a filesystem failure without an errno (fileError): /v1/file answers it 200
	ETag     string       // kindPreconditionFailed: the target's ETag now, "" when it does not exist
	NoRoom   bool         // a quota or the journal refused it (core.ErrQuota, core.StateError): 507 in every family, /v1/file too
}

// requestError is a refusal the boundary makes itself: a bad query, a bad
// body, a wrong media type, a missing token.
type requestError struct {
	kind   kind
	status int
	msg    string
}

func (e *requestError) Error() string { return e.msg }

func invalidRequest(format string, args ...any) error {
	return &requestError{kindInvalidRequest, http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func unsupportedMedia(format string, args ...any) error {
	return &requestError{kindUnsupportedMedia, http.StatusUnsupportedMediaType, fmt.Sprintf(format, args...)}
}

func tooLarge(format string, args ...any) error {
	return &requestError{kindTooLarge, http.StatusRequestEntityTooLarge, fmt.Sprintf(format, args...)}
}

// fileError is an expected failure of a file operation that carries no
// errno: a text read of bytes that are not UTF-8 (decode_error, 422) or of a
// file over the buffered limit (file_too_large, 413). /v1/file answers it
// 200 with success:false, like a failure with an errno.
type fileError struct {
	kind     kind
	status   int
	op, path string
	msg      string
}

func (e *fileError) Error() string { return e.msg }

var errUnauthorized = &requestError{kindUnauthorized, http.StatusUnauthorized, "missing or invalid token"}

// bodyError marks a failure reading the request body (the client sent less
// than it announced, went away, or sent more than a limit allows), so it is
// not mistaken for a failure of the filesystem, however core wrapped it.
type bodyError struct{ err error }

func (e *bodyError) Error() string { return "reading the request body: " + e.err.Error() }
func (e *bodyError) Unwrap() error { return e.err }

// fieldError is one entry of aioValidation.Errors. Location is dotted:
// "body", "body.path", "query.limit".
type fieldError struct {
	Location string `json:"location"`
	Message  string `json:"message"`
	Type     string `json:"type"`
}

// validationError is a request the AIO family refuses with 422.
type validationError struct{ fields []fieldError }

func (e *validationError) Error() string {
	parts := make([]string, len(e.fields))
	for i, f := range e.fields {
		parts[i] = f.Location + ": " + f.Message
	}
	return "request validation failed: " + strings.Join(parts, "; ")
}

func invalidField(location, typ, format string, args ...any) error {
	return &validationError{[]fieldError{{Location: location, Message: fmt.Sprintf(format, args...), Type: typ}}}
}

// opError names the AIO operation a failure belongs to (the "operation" of
// the failure data) when the error itself names none.
type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

func (e *opError) opName() string {
	if e == nil {
		return ""
	}
	return e.op
}

// withOp marks err as a failure of the AIO operation op.
func withOp(op string, err error) error {
	if err == nil {
		return nil
	}
	return &opError{op, err}
}

// classify turns any error a handler returns into a kind and a status
// (api.md §2). It looks at types and errnos only, never at message text.
func classify(err error) errKind {
	var oe *opError
	errors.As(err, &oe)
	var re *requestError
	if errors.As(err, &re) {
		return errKind{Kind: re.kind, Status: re.status, Op: oe.opName(), Detail: re.msg}
	}
	var fe *fileError
	if errors.As(err, &fe) {
		return errKind{Kind: fe.kind, Status: fe.status, Op: fe.op, Path: fe.path, Detail: fe.msg, Expected: true}
	}
	var ve *validationError
	if errors.As(err, &ve) {
		return errKind{Kind: kindValidation, Status: http.StatusUnprocessableEntity, Detail: ve.Error(), Fields: ve.fields}
	}
	switch {
	case errors.Is(err, journal.ErrUnknownWatcher), errors.Is(err, journal.ErrWatcherClosed):
		return errKind{Kind: kindNotFound, Status: http.StatusNotFound, Op: oe.opName(), Detail: err.Error()}
	case errors.Is(err, changes.ErrQuery):
		return errKind{Kind: kindInvalidRequest, Status: http.StatusBadRequest, Op: oe.opName(), Detail: err.Error()}
	case errors.Is(err, journal.ErrStoreUnavailable):
		// The history cannot be read now (a damaged database, a full
		// state disk): a condition of the daemon, not of the request.
		return errKind{Kind: kindJournalUnavailable, Status: http.StatusServiceUnavailable, Op: oe.opName(), Detail: err.Error()}
	case errors.Is(err, journal.ErrTooManyWatchers):
		return errKind{Kind: kindTooManyWatchers, Status: http.StatusTooManyRequests, Op: oe.opName(),
			Detail: fmt.Sprintf("too many watchers: at most %d run at once; stop one first", journal.MaxWatchers)}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return errKind{Kind: kindTooLarge, Status: http.StatusRequestEntityTooLarge,
			Detail: fmt.Sprintf("request body is larger than the limit of %d bytes", mbe.Limit)}
	}
	var be *bodyError
	if errors.As(err, &be) {
		return errKind{Kind: kindInvalidRequest, Status: http.StatusBadRequest, Detail: be.Error()}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The client went away; nobody reads this answer.
		return errKind{Kind: kindInvalidRequest, Status: http.StatusBadRequest, Detail: "request canceled"}
	}
	var pce *core.PreconditionError
	if errors.As(err, &pce) {
		op := oe.opName()
		if op == "" {
			op = pce.Op
		}
		return errKind{Kind: kindPreconditionFailed, Status: http.StatusPreconditionFailed, Op: op,
			Path: pce.Path, Detail: pce.Error(), ETag: pce.Current}
	}
	if k, ok := classifyHistory(err); ok {
		return k
	}
	var pate *core.PatternError
	if errors.As(err, &pate) {
		return errKind{Kind: kindInvalidRequest, Status: http.StatusBadRequest, Op: oe.opName(), Detail: pate.Error()}
	}
	var te *coretar.EntryError
	if errors.As(err, &te) {
		k := errKind{Kind: kindInvalidPath, Status: http.StatusBadRequest, Errno: te.Errno, Op: coretar.OpUntar, Detail: te.Error()}
		if te.Errno == unix.EFBIG {
			k.Kind, k.Status = kindTooLarge, http.StatusRequestEntityTooLarge
		}
		return k
	}

	k := errKind{Op: oe.opName()}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		k.Op, k.Path = pe.Op, pe.Path
		if !utf8.ValidString(k.Path) {
			k.Path = "" // names.go: never a path that JSON would turn into another file's
		}
	}
	errno, ok := core.Errno(err)
	if !ok {
		if k.Op == coretar.OpUntar && isTarFormatError(err) {
			k.Kind, k.Status = kindInvalidRequest, http.StatusBadRequest
			k.Detail = "malformed tar archive: " + innermost(err).Error()
			return k
		}
		k.Kind, k.Status, k.Internal = kindIO, http.StatusInternalServerError, true
		return k
	}
	k.Errno = errno
	k.Kind, k.Status = errnoKind(errno, k.Op)
	if k.Kind == kindIO {
		k.Internal = true
		return k
	}
	var qe *core.QuotaError
	var se *core.StateError
	switch {
	case errors.As(err, &qe):
		// The sandbox's quota (507): which bound, its limit, the usage.
		k.Detail = fmt.Sprintf("%s %s: %s", k.Op, quoteIfBad(k.Path), qe.Error())
		k.NoRoom = true
	case errors.As(err, &se):
		k.Detail = fmt.Sprintf("%s %s: %s", k.Op, quoteIfBad(k.Path), se)
		k.NoRoom = true
	case errors.Is(err, core.ErrSetid):
		k.Detail = fmt.Sprintf("%s %s: %s", k.Op, k.Path, core.ErrSetid)
	case k.Op == "resolve" && errno == unix.EINVAL:
		k.Kind = kindInvalidPath
		k.Detail = "path is empty or contains a NUL byte"
	case pe != nil:
		k.Detail = fmt.Sprintf("%s %s: %s", pe.Op, quoteIfBad(pe.Path), errno.Error())
	default:
		k.Detail = errno.Error()
	}
	return k
}

// errnoKind is the errno column of api.md §2. op tells a non-empty directory
// on delete (invalid_target) from one as a move target (already_exists), and
// a destination a move or copy may not replace (core.OpReplace: a non-empty
// directory, a directory by a file, a file by a directory) from a bad path:
// the first are conflicts with what is there (409 already_exists).
func errnoKind(errno unix.Errno, op string) (kind, int) {
	if op == core.OpReplace {
		switch errno {
		case unix.ENOTEMPTY, unix.EISDIR, unix.ENOTDIR:
			return kindAlreadyExists, http.StatusConflict
		}
	}
	switch errno {
	case unix.ENOENT, unix.ENODATA: // ENODATA: a missing extended attribute
		return kindNotFound, http.StatusNotFound
	case unix.EOPNOTSUPP: // extended attributes on a filesystem without them
		return kindInvalidTarget, http.StatusBadRequest
	case unix.E2BIG, unix.ERANGE: // an extended attribute too large
		return kindTooLarge, http.StatusRequestEntityTooLarge
	case unix.EACCES, unix.EPERM:
		return kindPermissionDenied, http.StatusForbidden
	case unix.EEXIST:
		return kindAlreadyExists, http.StatusConflict
	case unix.ENOTEMPTY:
		if op == core.OpRemove {
			return kindInvalidTarget, http.StatusConflict
		}
		return kindAlreadyExists, http.StatusConflict
	case unix.ENOTDIR, unix.EISDIR, unix.EINVAL,
		unix.ENXIO, unix.ENODEV: // open(2) of a socket, a FIFO with no reader, a device with no driver
		return kindInvalidTarget, http.StatusBadRequest
	case unix.ELOOP, unix.ENAMETOOLONG:
		return kindInvalidPath, http.StatusBadRequest
	case unix.EROFS:
		return kindReadOnly, http.StatusForbidden
	case unix.ENOSPC, unix.EDQUOT:
		return kindNoSpace, http.StatusInsufficientStorage
	case unix.EFBIG:
		return kindTooLarge, http.StatusRequestEntityTooLarge
	}
	return kindIO, http.StatusInternalServerError
}

func isTarFormatError(err error) bool {
	return errors.Is(err, tar.ErrHeader) || errors.Is(err, tar.ErrFieldTooLong) ||
		errors.Is(err, tar.ErrInsecurePath) || errors.Is(err, io.ErrUnexpectedEOF) ||
		// A sparse entry whose map and data disagree: archive/tar's own
		// errors for it are not exported, only their words.
		strings.HasPrefix(innermost(err).Error(), "archive/tar: sparse file ")
}

func innermost(err error) error {
	for {
		u := errors.Unwrap(err)
		if u == nil {
			return err
		}
		err = u
	}
}

// fail classifies err, logs what the client will not see, and renders it in
// the family's shape.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, fam family, pattern string, err error) {
	k := classify(err)
	if k.Internal {
		id := errorID()
		s.log.Error("request failed", "id", id, "method", r.Method, "route", pattern, "err", err)
		k.Detail = "internal error " + id + "; the server log has the details"
	}
	if k.Kind == kindPreconditionFailed && k.ETag != "" {
		w.Header().Set("ETag", k.ETag)
	}
	fam.render(w, k)
}

func errorID() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeError writes an error answer: the header block every family's
// shape shares (no stale Content-Length, nosniff, the Bearer challenge on a
// 401), then v as JSON of type contentType.
func writeError(w http.ResponseWriter, status int, contentType string, v any) {
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", contentType)
	h.Set("X-Content-Type-Options", "nosniff")
	if status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="sandfs"`)
	}
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// family is a route family's error shape.
type family struct {
	name   string
	render func(w http.ResponseWriter, k errKind)
}

func familyOf(name string) family {
	switch name {
	case FamilyAgent:
		return family{name, renderAgentProblem}
	case FamilyAIOv1:
		return family{name, renderAIOv1}
	case FamilyAIOv2:
		return family{name, renderAIOv2}
	case FamilyNamed:
		return family{name, renderNamed}
	default:
		// Service routes (health, openapi) and unknown paths speak problem+json
		// too: the only error they give is 401/404/405.
		return family{FamilyService, renderAgentProblem}
	}
}

// familyForPath picks the family of a path no route matched (404, 405).
func familyForPath(p string) family {
	switch {
	case strings.HasPrefix(p, "/v1/fs/"):
		return familyOf(FamilyAgent)
	case p == "/v1/file" || strings.HasPrefix(p, "/v1/file/"):
		return familyOf(FamilyAIOv1)
	case strings.HasPrefix(p, "/v2/"):
		return familyOf(FamilyAIOv2)
	case strings.HasPrefix(p, "/v1/sandboxes/"), strings.HasPrefix(p, "/v1/sprites/"):
		return familyOf(FamilyNamed)
	}
	return familyOf(FamilyService)
}

// notFound answers a path no route matches.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	if s.refuseBrowser(w, r) {
		return
	}
	s.familyForPath(r.URL.Path).render(w, errKind{Kind: kindRouteNotFound, Status: http.StatusNotFound,
		Detail: "no route " + r.Method + " " + r.URL.Path})
}

// methodNotAllowed answers a known path asked with the wrong method
// (httprouter has set Allow).
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	if s.refuseBrowser(w, r) {
		return
	}
	s.familyForPath(r.URL.Path).render(w, errKind{Kind: kindMethodNotAllowed, Status: http.StatusMethodNotAllowed,
		Detail: "method " + r.Method + " not allowed on " + r.URL.Path + "; allowed: " + w.Header().Get("Allow")})
}

// classifyHistory maps the errors of checkpoints and restore (api.md §5a):
// a checkpoint past the store's bound 507, an unknown checkpoint 404, a sandbox without state, a journal that lost
// events or a file that kept changing 409, a refused restore path 400.
func classifyHistory(err error) (errKind, bool) {
	var rpe *checkpoint.RestorePathError
	var full *checkpoint.StoreFullError
	switch {
	case errors.As(err, &full):
		return errKind{Kind: kindNoSpace, Status: http.StatusInsufficientStorage, Errno: unix.ENOSPC, Op: "checkpoint", Detail: full.Error(), NoRoom: true}, true
	case errors.Is(err, checkpoint.ErrUnknown):
		return errKind{Kind: kindNotFound, Status: http.StatusNotFound, Errno: unix.ENOENT, Detail: err.Error()}, true
	case errors.Is(err, checkpoint.ErrNoState):
		return errKind{Kind: kindInvalidTarget, Status: http.StatusConflict, Errno: unix.EOPNOTSUPP,
			Detail: err.Error() + " (the daemon runs without --state)"}, true
	case errors.Is(err, checkpoint.ErrKeptChanging):
		k := errKind{Kind: kindInvalidTarget, Status: http.StatusConflict, Errno: unix.EAGAIN, Op: "checkpoint", Detail: err.Error()}
		var pe *fs.PathError
		if errors.As(err, &pe) && utf8.ValidString(pe.Path) {
			k.Path = pe.Path
		}
		return k, true
	case errors.Is(err, checkpoint.ErrJournalLost):
		return errKind{Kind: kindInvalidTarget, Status: http.StatusConflict, Errno: unix.ESTALE, Detail: err.Error()}, true
	case errors.As(err, &rpe):
		k := errKind{Kind: kindInvalidPath, Status: http.StatusBadRequest, Errno: unix.EINVAL, Op: "restore", Detail: rpe.Error()}
		if utf8.ValidString(rpe.Path) {
			k.Path = rpe.Path
		}
		return k, true
	}
	return errKind{}, false
}
