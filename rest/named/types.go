package named

import (
	"encoding/json"
	"net/http"
	"time"

	"golang.org/x/sys/unix"

	"sandfs/api"
	"sandfs/core"
	"sandfs/rest/httpkit"
)

// The wire types of the named-sandbox family (api.md §5) and its error
// shape.

const (
	// MaxWrite caps the body of PUT /fs/write (api.md §1).
	MaxWrite = 16 << 20
	// maxNamedEntries caps a listing (api.md §1 list limit).
	maxNamedEntries = 10_000
)

type WriteResponse struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	Mode string `json:"mode"`
}

type DeleteRequest struct {
	Path       *string `json:"path"`
	WorkingDir string  `json:"workingDir"`
	Recursive  bool    `json:"recursive"`
	AsRoot     any     `json:"asRoot"`
	IfMatch    *string `json:"ifMatch"` // httpkit/precondition.go
}

type DeleteResponse struct {
	Deleted []string `json:"deleted"`
	Count   int      `json:"count"`
}

type MoveRequest struct {
	Source        *string `json:"source"`
	Dest          *string `json:"dest"`
	WorkingDir    string  `json:"workingDir"`
	Recursive     bool    `json:"recursive"`
	PreserveAttrs bool    `json:"preserveAttrs"`
	AsRoot        any     `json:"asRoot"`
	IfMatch       *string `json:"ifMatch"` // rename's precondition on the source (httpkit/precondition.go)
}

type MoveResponse struct {
	Source string `json:"source"`
	Dest   string `json:"dest"`
}

type CopyResponse struct {
	Source     string `json:"source"`
	Dest       string `json:"dest"`
	Count      int    `json:"count"`
	TotalBytes int64  `json:"totalBytes"`
}

type ChmodRequest struct {
	Path       *string `json:"path"`
	Mode       *string `json:"mode"`
	WorkingDir string  `json:"workingDir"`
	Recursive  bool    `json:"recursive"`
	AsRoot     any     `json:"asRoot"`
}

type ChmodResponse struct {
	Path  string `json:"path"`
	Mode  string `json:"mode"`
	Count int    `json:"count"`
}

type ChownRequest struct {
	Path       *string         `json:"path"`
	Uid        json.RawMessage `json:"uid"`
	Gid        json.RawMessage `json:"gid"`
	WorkingDir string          `json:"workingDir"`
	Recursive  bool            `json:"recursive"`
	AsRoot     any             `json:"asRoot"`
}

type ChownResponse struct {
	Path     string   `json:"path"`
	Affected []string `json:"affected"`
	Count    int      `json:"count"`
}

// toNamedEntry is a core.Info as a listing or a stat reports it.
func toNamedEntry(in core.Info) api.Entry {
	typ := "file"
	switch {
	case in.IsDir():
		typ = "directory"
	case in.IsSymlink():
		typ = "symlink"
	}
	return api.Entry{Name: in.Name, Path: in.Path, Type: typ, Size: in.Size, Mode: httpkit.ModeString(in.Mode),
		ModTime: in.ModTime.UTC().Format(time.RFC3339), IsDir: in.IsDir()}
}

// ErrorBody is the error shape of the named-sandbox family (api.md §5).
type ErrorBody struct {
	Error string `json:"error"`
	Code  string `json:"code"`
	Path  string `json:"path"`
	// CurrentEtag: a 412's target ETag now (absent when it does not exist).
	CurrentEtag string `json:"currentEtag,omitempty"`
}

// Render writes k as {"error", "code", "path"}: code is the errno name
// (ENOENT, …); a refusal that carries no errno gets the errno nearest its
// status (EINVAL for a bad request, EACCES for a missing token, EFBIG for a
// body over a limit, EIO for an internal failure).
func Render(w http.ResponseWriter, k httpkit.ErrKind) {
	code := ""
	if k.Errno != 0 {
		code = unix.ErrnoName(k.Errno)
	}
	if code == "" {
		switch k.Status {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusMisdirectedRequest:
			code = "EACCES"
		case http.StatusNotFound:
			code = "ENOENT"
		case http.StatusConflict:
			code = "EEXIST"
		case http.StatusPreconditionFailed:
			code = "ESTALE" // the caller's view of the file is stale
		case http.StatusRequestEntityTooLarge:
			code = "EFBIG"
		case http.StatusRequestHeaderFieldsTooLarge:
			code = "E2BIG"
		case http.StatusTooManyRequests:
			code = "EAGAIN"
		case http.StatusInsufficientStorage:
			code = "ENOSPC"
		case http.StatusNotImplemented:
			code = "ENOTSUP"
		case http.StatusServiceUnavailable:
			if k.Kind == httpkit.KindSandboxMoving {
				code = "EAGAIN" // try again once the move ends
			} else {
				code = "EIO"
			}
		default:
			if k.Status >= 500 {
				code = "EIO"
			} else {
				code = "EINVAL"
			}
		}
	}
	httpkit.WriteError(w, k.Status, "application/json", ErrorBody{Error: k.Detail, Code: code, Path: k.Path, CurrentEtag: k.ETag})
}
