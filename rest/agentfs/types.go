package agentfs

import (
	"fmt"
	"net/http"
	"time"

	"sandfs/api"
	"sandfs/core"
	"sandfs/rest/httpkit"
)

// Wire types of the sandbox-agent family, to the field of the sandbox-agent spec
// (router.rs, serde rename_all = "camelCase").

// Entry types: FsEntryType, serde rename_all = "lowercase".
const (
	entryFile      = "file"
	entryDirectory = "directory"
)

// agentEntryType is "directory" for a directory and "file" for anything
// else, as the seed's metadata.is_dir() test. Entries are lstat'ed (Rust's
// DirEntry::metadata does not follow symlinks), so a symlink is a "file".
func agentEntryType(in core.Info) string {
	if in.IsDir() {
		return entryDirectory
	}
	return entryFile
}

func agentEntry(in core.Info) api.FSEntry {
	return api.FSEntry{
		Name:      in.Name,
		Path:      in.Path,
		EntryType: agentEntryType(in),
		Size:      uint64(max(in.Size, 0)),
		Modified:  chronoRFC3339(in.ModTime),
	}
}

func agentStat(in core.Info) api.FSStat {
	return api.FSStat{
		Path:      in.Path,
		EntryType: agentEntryType(in),
		Size:      uint64(max(in.Size, 0)),
		Modified:  chronoRFC3339(in.ModTime),
		Etag:      core.ETag(in),
	}
}

// chronoRFC3339 formats t as chrono's DateTime<Utc>::to_rfc3339 does, which
// is what sandbox-agent clients see: UTC, "+00:00" rather than "Z", and the
// fraction in 0, 3, 6 or 9 digits (SecondsFormat::AutoSi).
func chronoRFC3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	t = t.UTC()
	ns := t.Nanosecond()
	var frac string
	switch {
	case ns == 0:
	case ns%1_000_000 == 0:
		frac = fmt.Sprintf(".%03d", ns/1_000_000)
	case ns%1_000 == 0:
		frac = fmt.Sprintf(".%06d", ns/1_000)
	default:
		frac = fmt.Sprintf(".%09d", ns)
	}
	return t.Format("2006-01-02T15:04:05") + frac + "+00:00"
}

// agentType is one member of sandbox-agent's ErrorType enum.
type agentType struct{ name, title, prefix string }

var (
	agentInvalidRequest   = agentType{"invalid_request", "Invalid Request", "invalid request: "}
	agentNotFound         = agentType{"not_found", "Not Found", "not found: "}
	agentConflict         = agentType{"conflict", "Conflict", "conflict: "}
	agentPermissionDenied = agentType{"permission_denied", "Permission Denied", "permission denied: "}
	agentStreamError      = agentType{"stream_error", "Stream Error", "stream error: "}
	agentUnsupportedMedia = agentType{"unsupported_media_type", "Unsupported Media Type", "unsupported media type: "}
	agentTokenInvalid     = agentType{"token_invalid", "Token Invalid", "token invalid: "}
)

// agentTypeOf maps a classified error onto sandbox-agent's enum, which has
// no kind for a full disk, a too-large body or an unknown failure: those keep
// their HTTP status (507, 413, 500) under stream_error / invalid_request.
func agentTypeOf(k httpkit.ErrKind) agentType {
	switch k.Status {
	case http.StatusUnauthorized:
		return agentTokenInvalid
	case http.StatusForbidden, http.StatusMisdirectedRequest:
		return agentPermissionDenied
	case http.StatusNotFound:
		return agentNotFound
	case http.StatusConflict, http.StatusPreconditionFailed:
		// The enum has no precondition kind: a 412 is a conflict with
		// the file's current state, told apart by its status.
		return agentConflict
	case http.StatusUnsupportedMediaType:
		return agentUnsupportedMedia
	}
	if k.Status >= 500 {
		return agentStreamError
	}
	return agentInvalidRequest
}

// Problem is sandbox-agent's ProblemDetails.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	// CurrentEtag is an extension member of a 412: the target's ETag now
	// (absent when it does not exist).
	CurrentEtag string `json:"currentEtag,omitempty"`
}

// RenderProblem writes k as application/problem+json
// {type:"urn:sandbox-agent:error:<kind>", title, status, detail}.
func RenderProblem(w http.ResponseWriter, k httpkit.ErrKind) {
	t := agentTypeOf(k)
	httpkit.WriteError(w, k.Status, "application/problem+json", Problem{
		Type:        "urn:sandbox-agent:error:" + t.name,
		Title:       t.title,
		Status:      k.Status,
		Detail:      t.prefix + k.Detail,
		CurrentEtag: k.ETag,
	})
}
