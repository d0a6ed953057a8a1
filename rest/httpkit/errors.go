package httpkit

import (
	"archive/tar"
	"context"
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
	"sandfs/core/pathmatch"
	"sandfs/core/precond"
	coretar "sandfs/core/tar"
)

// kind names what went wrong, as api.md §2's error_type. Every family
// renders a kind in its own shape; the kind and the status are decided once,
// here, for all of them.
type Kind string

const (
	// Filesystem kinds (from the errno core returns).
	KindNotFound         Kind = "not_found"
	KindPermissionDenied Kind = "permission_denied"
	KindAlreadyExists    Kind = "already_exists"
	KindInvalidTarget    Kind = "invalid_target"
	KindInvalidPath      Kind = "invalid_path"
	KindReadOnly         Kind = "read_only_filesystem"
	KindNoSpace          Kind = "no_space_left"
	KindTooLarge         Kind = "file_too_large"
	KindDecode           Kind = "decode_error"
	KindIO               Kind = "io_error"

	// Request kinds (the boundary refuses before or around the core call).
	KindInvalidRequest   Kind = "invalid_request"
	KindUnsupportedMedia Kind = "unsupported_media_type"
	KindUnauthorized     Kind = "unauthorized"
	KindRouteNotFound    Kind = "route_not_found"
	KindMethodNotAllowed Kind = "method_not_allowed"
	KindValidation       Kind = "validation_error"     // AIO: malformed JSON, missing field, wrong type (422)
	KindCrossOrigin      Kind = "cross_origin_refused" // a page of another origin (403, rest/browser.go)
	KindMisdirected      Kind = "misdirected_request"  // a Host this daemon does not answer for (421, rest/browser.go)
	KindHeaderTooLarge   Kind = "header_too_large"     // request line and headers over the limit (431, rest/preroute.go)

	// Watch lifecycle kinds (api.md §4: 404 unknown watcher, 429, 503).
	KindTooManyWatchers Kind = "too_many_watchers"
	KindTimeout         Kind = "timeout"

	// The durable journal cannot answer (503, /health says why).
	KindJournalUnavailable Kind = "journal_unavailable"

	// A checkpoint a sandbox was taken up from, not yet in this host's
	// store: it will be, in seconds (503).
	KindCheckpointStoring Kind = "checkpoint_storing"

	// The sandbox is moving between hosts of the fleet: nobody serves it
	// until the move ends (503 with Retry-After, rest/placement.go).
	KindSandboxMoving Kind = "sandbox_moving"

	// What this daemon cannot do as it runs (a fork without root: 501).
	KindNotSupported Kind = "not_supported"

	// Download under change_policy=abort: the file is not the one the
	// client's If-Match names (409).
	KindFileChanged Kind = "file_changed"

	// A write, edit, move or delete whose precondition (If-Match,
	// If-None-Match: *, expected_etag, ifMatch) the target does not meet
	// (412); ErrKind.ETag is the target's ETag now.
	KindPreconditionFailed Kind = "precondition_failed"
)

// ErrKind is an error classified: everything a family renderer needs, and
// nothing a client must not see.
type ErrKind struct {
	Kind     Kind
	Status   int
	Errno    unix.Errno   // 0 when the error carried none
	Op       string       // core op (core.OpStat, …), "" when none
	Path     string       // API path, "" when none
	Detail   string       // safe for a client: API paths only, no panic, no host path
	Internal bool         // unknown error: the full error goes to the log, Detail is generic
	Fields   []FieldError // KindValidation: what is wrong, field by field
	Expected bool         // a filesystem failure without an errno (FileError): /v1/file answers it 200
	ETag     string       // KindPreconditionFailed: the target's ETag now, "" when it does not exist
	NoRoom   bool         // a quota or the journal refused it (core.ErrQuota, core.StateError): 507 in every family, /v1/file too
}

// RequestError is a refusal the boundary makes itself: a bad query, a bad
// body, a wrong media type, a missing token.
type RequestError struct {
	Kind   Kind
	Status int
	Msg    string
}

func (e *RequestError) Error() string { return e.Msg }

func InvalidRequest(format string, args ...any) error {
	return &RequestError{KindInvalidRequest, http.StatusBadRequest, fmt.Sprintf(format, args...)}
}

func UnsupportedMedia(format string, args ...any) error {
	return &RequestError{KindUnsupportedMedia, http.StatusUnsupportedMediaType, fmt.Sprintf(format, args...)}
}

func TooLarge(format string, args ...any) error {
	return &RequestError{KindTooLarge, http.StatusRequestEntityTooLarge, fmt.Sprintf(format, args...)}
}

// FileError is an expected failure of a file operation that carries no
// errno: a text read of bytes that are not UTF-8 (decode_error, 422) or of a
// file over the buffered limit (file_too_large, 413). /v1/file answers it
// 200 with success:false, like a failure with an errno.
type FileError struct {
	Kind     Kind
	Status   int
	Op, Path string
	Msg      string
	Errno    unix.Errno // the errno a family that tells one gives; 0: the status's usual one
}

func (e *FileError) Error() string { return e.Msg }

var ErrUnauthorized = &RequestError{KindUnauthorized, http.StatusUnauthorized, "missing or invalid token"}

// BodyError marks a failure reading the request body (the client sent less
// than it announced, went away, or sent more than a limit allows), so it is
// not mistaken for a failure of the filesystem, however core wrapped it.
type BodyError struct{ Err error }

func (e *BodyError) Error() string { return "reading the request body: " + e.Err.Error() }
func (e *BodyError) Unwrap() error { return e.Err }

// FieldError is one entry of aioValidation.Errors. Location is dotted:
// "body", "body.path", "query.limit".
type FieldError struct {
	Location string `json:"location"`
	Message  string `json:"message"`
	Type     string `json:"type"`
}

// ValidationError is a request the AIO family refuses with 422.
type ValidationError struct{ Fields []FieldError }

func (e *ValidationError) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Location + ": " + f.Message
	}
	return "request validation failed: " + strings.Join(parts, "; ")
}

func InvalidField(location, typ, format string, args ...any) error {
	return &ValidationError{[]FieldError{{Location: location, Message: fmt.Sprintf(format, args...), Type: typ}}}
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

// WithOp marks err as a failure of the AIO operation op.
func WithOp(op string, err error) error {
	if err == nil {
		return nil
	}
	return &opError{op, err}
}

// Classify turns any error a handler returns into a kind and a status
// (api.md §2). It looks at types and errnos only, never at message text.
func Classify(err error) ErrKind {
	var oe *opError
	errors.As(err, &oe)
	var re *RequestError
	if errors.As(err, &re) {
		return ErrKind{Kind: re.Kind, Status: re.Status, Op: oe.opName(), Detail: re.Msg}
	}
	var fe *FileError
	if errors.As(err, &fe) {
		return ErrKind{Kind: fe.Kind, Status: fe.Status, Op: fe.Op, Path: fe.Path, Detail: fe.Msg, Errno: fe.Errno, Expected: true}
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		return ErrKind{Kind: KindValidation, Status: http.StatusUnprocessableEntity, Detail: ve.Error(), Fields: ve.Fields}
	}
	switch {
	case errors.Is(err, journal.ErrUnknownWatcher), errors.Is(err, journal.ErrWatcherClosed):
		return ErrKind{Kind: KindNotFound, Status: http.StatusNotFound, Op: oe.opName(), Detail: err.Error()}
	case errors.Is(err, changes.ErrQuery):
		return ErrKind{Kind: KindInvalidRequest, Status: http.StatusBadRequest, Op: oe.opName(), Detail: err.Error()}
	case errors.Is(err, journal.ErrStoreUnavailable):
		// The history cannot be read now (a damaged database, a full
		// state disk): a condition of the daemon, not of the request.
		return ErrKind{Kind: KindJournalUnavailable, Status: http.StatusServiceUnavailable, Op: oe.opName(), Detail: err.Error()}
	case errors.Is(err, journal.ErrTooManyWatchers):
		return ErrKind{Kind: KindTooManyWatchers, Status: http.StatusTooManyRequests, Op: oe.opName(),
			Detail: fmt.Sprintf("too many watchers: at most %d run at once; stop one first", journal.MaxWatchers)}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return ErrKind{Kind: KindTooLarge, Status: http.StatusRequestEntityTooLarge,
			Detail: fmt.Sprintf("request body is larger than the limit of %d bytes", mbe.Limit)}
	}
	var be *BodyError
	if errors.As(err, &be) {
		return ErrKind{Kind: KindInvalidRequest, Status: http.StatusBadRequest, Detail: be.Error()}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The client went away; nobody reads this answer.
		return ErrKind{Kind: KindInvalidRequest, Status: http.StatusBadRequest, Detail: "request canceled"}
	}
	var pce *precond.Error
	if errors.As(err, &pce) {
		op := oe.opName()
		if op == "" {
			op = pce.Op
		}
		return ErrKind{Kind: KindPreconditionFailed, Status: http.StatusPreconditionFailed, Op: op,
			Path: pce.Path, Detail: pce.Error(), ETag: pce.Current}
	}
	if k, ok := classifyHistory(err); ok {
		return k
	}
	var pate *pathmatch.PatternError
	if errors.As(err, &pate) {
		return ErrKind{Kind: KindInvalidRequest, Status: http.StatusBadRequest, Op: oe.opName(), Detail: pate.Error()}
	}
	var te *coretar.EntryError
	if errors.As(err, &te) {
		k := ErrKind{Kind: KindInvalidPath, Status: http.StatusBadRequest, Errno: te.Errno, Op: coretar.OpUntar, Detail: te.Error()}
		if te.Errno == unix.EFBIG {
			k.Kind, k.Status = KindTooLarge, http.StatusRequestEntityTooLarge
		}
		return k
	}

	k := ErrKind{Op: oe.opName()}
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
			k.Kind, k.Status = KindInvalidRequest, http.StatusBadRequest
			k.Detail = "malformed tar archive: " + innermost(err).Error()
			return k
		}
		k.Kind, k.Status, k.Internal = KindIO, http.StatusInternalServerError, true
		return k
	}
	k.Errno = errno
	k.Kind, k.Status = ErrnoKind(errno, k.Op)
	if k.Kind == KindIO {
		k.Internal = true
		return k
	}
	var qe *core.QuotaError
	var se *core.StateError
	switch {
	case errors.As(err, &qe):
		// The sandbox's quota (507): which bound, its limit, the usage.
		k.Detail = fmt.Sprintf("%s %s: %s", k.Op, QuoteIfBad(k.Path), qe.Error())
		k.NoRoom = true
	case errors.As(err, &se):
		k.Detail = fmt.Sprintf("%s %s: %s", k.Op, QuoteIfBad(k.Path), se)
		k.NoRoom = true
	case errors.Is(err, core.ErrSetid):
		k.Detail = fmt.Sprintf("%s %s: %s", k.Op, k.Path, core.ErrSetid)
	case k.Op == "resolve" && errno == unix.EINVAL:
		k.Kind = KindInvalidPath
		k.Detail = "path is empty or contains a NUL byte"
	case pe != nil:
		k.Detail = fmt.Sprintf("%s %s: %s", pe.Op, QuoteIfBad(pe.Path), errno.Error())
	default:
		k.Detail = errno.Error()
	}
	return k
}

// ErrnoKind is the errno column of api.md §2. op tells a non-empty directory
// on delete (invalid_target) from one as a move target (already_exists), and
// a destination a move or copy may not replace (core.OpReplace: a non-empty
// directory, a directory by a file, a file by a directory) from a bad path:
// the first are conflicts with what is there (409 already_exists).
func ErrnoKind(errno unix.Errno, op string) (Kind, int) {
	if op == core.OpReplace {
		switch errno {
		case unix.ENOTEMPTY, unix.EISDIR, unix.ENOTDIR:
			return KindAlreadyExists, http.StatusConflict
		}
	}
	switch errno {
	case unix.ENOENT, unix.ENODATA: // ENODATA: a missing extended attribute
		return KindNotFound, http.StatusNotFound
	case unix.EOPNOTSUPP: // extended attributes on a filesystem without them
		return KindInvalidTarget, http.StatusBadRequest
	case unix.E2BIG, unix.ERANGE: // an extended attribute too large
		return KindTooLarge, http.StatusRequestEntityTooLarge
	case unix.EACCES, unix.EPERM:
		return KindPermissionDenied, http.StatusForbidden
	case unix.EEXIST:
		return KindAlreadyExists, http.StatusConflict
	case unix.ENOTEMPTY:
		if op == core.OpRemove {
			return KindInvalidTarget, http.StatusConflict
		}
		return KindAlreadyExists, http.StatusConflict
	case unix.ENOTDIR, unix.EISDIR, unix.EINVAL,
		unix.ENXIO, unix.ENODEV: // open(2) of a socket, a FIFO with no reader, a device with no driver
		return KindInvalidTarget, http.StatusBadRequest
	case unix.ELOOP, unix.ENAMETOOLONG:
		return KindInvalidPath, http.StatusBadRequest
	case unix.EROFS:
		return KindReadOnly, http.StatusForbidden
	case unix.ENOSPC, unix.EDQUOT:
		return KindNoSpace, http.StatusInsufficientStorage
	case unix.EFBIG:
		return KindTooLarge, http.StatusRequestEntityTooLarge
	}
	return KindIO, http.StatusInternalServerError
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

// WriteError writes an error answer: the header block every family's
// shape shares (no stale Content-Length, nosniff, the Bearer challenge on a
// 401), then v as JSON of type contentType.
func WriteError(w http.ResponseWriter, status int, contentType string, v any) {
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

// classifyHistory maps the errors of checkpoints and restore (api.md §5a):
// a checkpoint past the store's bound 507, an unknown checkpoint 404, one
// still being stored after a take-up 503, a sandbox without state, a journal that lost
// events or a file that kept changing 409, a refused restore path 400.
func classifyHistory(err error) (ErrKind, bool) {
	var rpe *checkpoint.RestorePathError
	var full *checkpoint.StoreFullError
	switch {
	case errors.As(err, &full):
		return ErrKind{Kind: KindNoSpace, Status: http.StatusInsufficientStorage, Errno: unix.ENOSPC, Op: "checkpoint", Detail: full.Error(), NoRoom: true}, true
	case errors.Is(err, checkpoint.ErrUnknown):
		return ErrKind{Kind: KindNotFound, Status: http.StatusNotFound, Errno: unix.ENOENT, Detail: err.Error()}, true
	case errors.Is(err, checkpoint.ErrStoring):
		return ErrKind{Kind: KindCheckpointStoring, Status: http.StatusServiceUnavailable, Errno: unix.EAGAIN, Detail: err.Error()}, true
	case errors.Is(err, checkpoint.ErrPinned):
		return ErrKind{Kind: KindInvalidTarget, Status: http.StatusConflict, Errno: unix.EBUSY, Detail: err.Error()}, true
	case errors.Is(err, checkpoint.ErrNoState):
		return ErrKind{Kind: KindInvalidTarget, Status: http.StatusConflict, Errno: unix.EOPNOTSUPP,
			Detail: err.Error() + " (the daemon runs without --state)"}, true
	case errors.Is(err, checkpoint.ErrKeptChanging):
		k := ErrKind{Kind: KindInvalidTarget, Status: http.StatusConflict, Errno: unix.EAGAIN, Op: "checkpoint", Detail: err.Error()}
		var pe *fs.PathError
		if errors.As(err, &pe) && utf8.ValidString(pe.Path) {
			k.Path = pe.Path
		}
		return k, true
	case errors.Is(err, checkpoint.ErrJournalLost):
		return ErrKind{Kind: KindInvalidTarget, Status: http.StatusConflict, Errno: unix.ESTALE, Detail: err.Error()}, true
	case errors.As(err, &rpe):
		k := ErrKind{Kind: KindInvalidPath, Status: http.StatusBadRequest, Errno: unix.EINVAL, Op: "restore", Detail: rpe.Error()}
		if utf8.ValidString(rpe.Path) {
			k.Path = rpe.Path
		}
		return k, true
	}
	return ErrKind{}, false
}
