package aio

import (
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"sandfs/rest/httpkit"
)

// The AIO family (api.md §2, §4; the AIO spec): every answer, success or
// failure, is the envelope {"success", "message", "data", "hint"}. The
// family has two dialects that differ only in the status of an expected
// filesystem failure: /v1/file/* answers it 200 with success:false, /v2/*
// with the status of §2. Failures that are not the filesystem's (a request
// out of bounds, an unknown watcher, the watcher limit, a wait that timed
// out, a missing token, an internal error) keep their status in both.

// MessageOK is the message of a successful answer, as the AIO daemon's
// Response model defaults it.
const MessageOK = "Operation successful"

// Envelope is the AIO Response model.
type Envelope struct {
	Success bool    `json:"success"`
	Message string  `json:"message"`
	Data    any     `json:"data"`
	Hint    *string `json:"hint"`
}

// Failure is the data of a failed AIO answer (FileOperationError).
type Failure struct {
	Path          string  `json:"path,omitempty"` // absent for a failure that names no path
	Operation     string  `json:"operation"`
	Message       string  `json:"message"`
	ErrorType     string  `json:"error_type"`
	Retryable     bool    `json:"retryable"`
	Errno         *int    `json:"errno"`
	ErrnoName     *string `json:"errno_name"`
	ExceptionType *string `json:"exception_type"`
	CurrentETag   string  `json:"current_etag,omitempty"` // precondition_failed: the ETag now (absent: no file)
}

// Validation is the 422 answer to a body that is not valid JSON, misses
// a required field or has a field of the wrong type.
type Validation struct {
	Success bool                 `json:"success"`
	Message string               `json:"message"`
	Errors  []httpkit.FieldError `json:"errors"`
	// Detail is the 1.x schema's HTTPValidationError, what its SDK reads
	// (/v1/file only; the fields above stay beside it).
	Detail []pydanticError `json:"detail,omitempty"`
}

// pydanticError is one item of HTTPValidationError.detail: loc is the
// field's path ("body", "path"), msg and type as pydantic words them.
type pydanticError struct {
	Loc  []any  `json:"loc"` // strings, and ints for list indices
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// pydanticErrors is fields as HTTPValidationError.detail.
func pydanticErrors(fields []httpkit.FieldError) []pydanticError {
	out := make([]pydanticError, len(fields))
	for i, f := range fields {
		var loc []any
		for _, part := range strings.Split(f.Location, ".") {
			if n, err := strconv.Atoi(part); err == nil {
				loc = append(loc, n)
			} else {
				loc = append(loc, part)
			}
		}
		out[i] = pydanticError{Loc: loc, Msg: f.Message, Type: f.Type}
	}
	return out
}

// writeAIO writes a successful AIO answer.
func writeAIO(w http.ResponseWriter, data any) error {
	return httpkit.WriteJSON(w, http.StatusOK, Envelope{Success: true, Message: MessageOK, Data: data})
}

func RenderV1(w http.ResponseWriter, k httpkit.ErrKind) { renderAIO(w, k, true) }
func RenderV2(w http.ResponseWriter, k httpkit.ErrKind) { renderAIO(w, k, false) }

// renderAIO writes k as an AIO envelope with success:false; v1 answers an
// expected filesystem failure (one that carries an errno) with 200.
func renderAIO(w http.ResponseWriter, k httpkit.ErrKind, v1 bool) {
	if k.Kind == httpkit.KindValidation {
		body := Validation{Success: false, Message: k.Detail, Errors: k.Fields}
		if v1 {
			body.Detail = pydanticErrors(k.Fields)
		}
		httpkit.WriteError(w, k.Status, "application/json", body)
		return
	}
	status := k.Status
	if v1 && (k.Errno != 0 || k.Expected) && !k.Internal && k.Op != "resolve" && !k.NoRoom {
		// An empty path or one with a NUL byte is a 400 in every family
		// (api.md §1), not a filesystem failure; a refusal for want of
		// room (a quota, a full state disk) is 507 in every family, as a
		// precondition's is 412.
		status = http.StatusOK
	}
	httpkit.WriteError(w, status, "application/json", Envelope{Success: false, Message: k.Detail, Data: aioFailureOf(k)})
}

func aioFailureOf(k httpkit.ErrKind) Failure {
	f := Failure{
		Path:        k.Path,
		Operation:   k.Op,
		Message:     k.Detail,
		ErrorType:   string(k.Kind),
		Retryable:   k.Status == http.StatusTooManyRequests || k.Status == http.StatusServiceUnavailable,
		CurrentETag: k.ETag,
	}
	if k.Kind == httpkit.KindRouteNotFound {
		f.ErrorType = string(httpkit.KindNotFound)
	}
	var exc string
	if k.Errno != 0 {
		n, name := int(k.Errno), unix.ErrnoName(k.Errno)
		f.Errno, f.ErrnoName = &n, &name
		f.Message = k.Errno.Error()
		switch k.Errno {
		case unix.EAGAIN, unix.EBUSY, unix.EINTR, unix.ETIMEDOUT:
			f.Retryable = true
		}
		exc = pythonException(k.Errno)
	} else {
		switch k.Kind {
		case httpkit.KindTimeout:
			exc = "TimeoutError"
		case httpkit.KindDecode:
			exc = "UnicodeDecodeError"
		case httpkit.KindInvalidRequest, httpkit.KindInvalidPath, httpkit.KindInvalidTarget:
			exc = "ValueError"
		}
	}
	if exc != "" {
		f.ExceptionType = &exc
	}
	return f
}

// pythonException is the Python OSError subclass the AIO daemon would have
// caught for errno.
func pythonException(errno unix.Errno) string {
	switch errno {
	case unix.ENOENT:
		return "FileNotFoundError"
	case unix.EEXIST:
		return "FileExistsError"
	case unix.EACCES, unix.EPERM:
		return "PermissionError"
	case unix.EISDIR:
		return "IsADirectoryError"
	case unix.ENOTDIR:
		return "NotADirectoryError"
	case unix.ETIMEDOUT:
		return "TimeoutError"
	case unix.EINTR:
		return "InterruptedError"
	case unix.EAGAIN:
		return "BlockingIOError"
	}
	return "OSError"
}

// decodeAIO decodes an AIO request body of at most limit bytes into v (a
// struct whose required fields are pointers) with httpkit.DecodeBody, in the AIO
// wording: malformed JSON, a body that is not an object, and a field of the
// wrong type are 422 validation errors; an empty body is one too unless
// emptyOK (then v keeps its zero value); a body over the limit is 413.
// Unknown fields are ignored, as pydantic does; on /v1/file, values of
// the wrong type that pydantic's lax mode converts are converted.
func decodeAIO(w http.ResponseWriter, r *http.Request, limit int64, v any, emptyOK bool) error {
	decode := httpkit.DecodeBody
	if strings.HasPrefix(r.URL.Path, "/v1/file/") {
		decode = decodeLax // lax.go: pydantic's lax mode, as the 1.x server
	}
	err := decode(w, r, limit, v, emptyOK)
	var jf *httpkit.JSONFailure
	if !errors.As(err, &jf) {
		return err
	}
	switch jf.What {
	case httpkit.JSONEmpty:
		return httpkit.InvalidField("body", "missing", "Field required: the request body is empty")
	case httpkit.JSONTruncated:
		return httpkit.InvalidField("body", "json_invalid", "JSON decode error: unexpected end of input")
	case httpkit.JSONSyntax:
		return httpkit.InvalidField("body", "json_invalid", "JSON decode error at byte %d: %v", jf.Offset, jf.Err)
	case httpkit.JSONFieldType:
		if jf.Field == "" {
			return httpkit.InvalidField("body", "model_attributes_type", "Input should be a valid dictionary or object, got %s", jf.Value)
		}
		typ, want := pydanticType(jf.Type)
		return httpkit.InvalidField("body."+jf.Field, typ, "Input should be %s, got %s", want, jf.Value)
	}
	return httpkit.InvalidField("body", "json_invalid", "JSON decode error: unexpected data after the JSON object")
}

// pydanticType names a Go type as pydantic's error type and message do.
func pydanticType(t reflect.Type) (typ, want string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string_type", "a valid string"
	case reflect.Bool:
		return "bool_type", "a valid boolean"
	case reflect.Slice, reflect.Array:
		return "list_type", "a valid list"
	case reflect.Struct, reflect.Map:
		return "model_attributes_type", "a valid dictionary or object"
	case reflect.Float32, reflect.Float64:
		return "float_type", "a valid number"
	}
	return "int_type", "a valid integer"
}
