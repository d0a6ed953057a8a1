package aio

import (
	"path"
	"strings"
	"time"

	"sandfs/core/journal"
)

// Wire types of the AIO watch routes (api.md §4, §6; the AIO spec "Watch a
// directory"; the 1.x schema's CreateWatchRequest, PollRequest and
// FileWatchWaitRequest). snake_case, as the AIO clients read them.

// Bounds of the watch requests. A value outside them is 400 (the AIO spec:
// "400 for a debounce or limit outside its bounds").
const (
	watchDebounceMin     = 50   // ms
	watchDebounceMax     = 5000 // ms
	watchDebounceDefault = 300  // ms

	pollTimeoutMax = 60 // s, both versions (schema: 0–60)

	// v1 follows the 1.x schema's PollRequest; v2 the contract's buffer.
	pollLimitMaxV1     = 1000
	pollLimitDefaultV1 = 100
	pollLimitMaxV2     = journal.BufferSize
	PollLimitDefaultV2 = 1000

	waitTimeoutMin     = 1   // s (schema: 1–300, default 30)
	waitTimeoutMax     = 300 // s
	waitTimeoutDefault = 30  // s
)

// watchCreateRequest is CreateWatchRequest. Pointers tell absent from zero;
// Exclude is a pointer to a slice so that an absent list (defaults) is told
// from an empty one (no excludes).
type watchCreateRequest struct {
	Path            *string   `json:"path"`
	Recursive       *bool     `json:"recursive"`
	Debounce        *int64    `json:"debounce"`
	Exclude         *[]string `json:"exclude"`
	IncludePatterns []string  `json:"include_patterns"`
}

// WatchCreated is the data of a watch create.
type WatchCreated struct {
	WatcherID     string `json:"watcher_id"`
	Path          string `json:"path"`
	Status        string `json:"status"`
	CreatedAt     string `json:"created_at"`
	Reused        bool   `json:"reused"`
	InitialCursor uint64 `json:"initial_cursor"`
}

// WatchInfo is one watcher of a listing.
type WatchInfo struct {
	WatcherID       string   `json:"watcher_id"`
	Path            string   `json:"path"`
	Status          string   `json:"status"`
	CreatedAt       string   `json:"created_at"`
	Recursive       bool     `json:"recursive"`
	Debounce        int64    `json:"debounce"`
	Exclude         []string `json:"exclude"`
	IncludePatterns []string `json:"include_patterns"`
	Subscribers     int      `json:"subscribers"`
}

// WatchList is the data of a watch list.
type WatchList struct {
	Watchers []WatchInfo `json:"watchers"`
	Count    int         `json:"count"`
}

// watchPollRequest is the 1.x PollRequest (POST /v1/file/watch/{id}/poll).
type watchPollRequest struct {
	Cursor  *int64 `json:"cursor"`
	Limit   *int64 `json:"limit"`
	Timeout *int64 `json:"timeout"`
}

// WatchBatch is the data of a poll.
type WatchBatch struct {
	Events   []WatchEvent `json:"events"`
	Cursor   uint64       `json:"cursor"`
	Overflow bool         `json:"overflow"`
}

// WatchStopped is the data of a watch stop.
type WatchStopped struct {
	WatcherID   string `json:"watcher_id"`
	Status      string `json:"status"`      // "stopped", or "active" while others hold it
	Subscribers int    `json:"subscribers"` // references left
}

// watchWaitRequest is FileWatchWaitRequest.
type watchWaitRequest struct {
	Path       *string  `json:"path"`
	Timeout    *int64   `json:"timeout"`
	EventTypes []string `json:"event_types"`
}

// WatchEvent is one journal event on the wire (api.md §6).
type WatchEvent struct {
	Seq          uint64  `json:"seq"`
	Type         string  `json:"type"`
	Path         string  `json:"path"`
	RelativePath string  `json:"relative_path"`
	OldPath      string  `json:"old_path,omitempty"`
	IsDir        bool    `json:"is_dir"`
	Size         int64   `json:"size"`
	Mtime        float64 `json:"mtime"`
	Inode        uint64  `json:"inode"`
	Timestamp    float64 `json:"timestamp"`
	Origin       string  `json:"origin"`
	Actor        string  `json:"actor,omitempty"` // api: X-Sandfs-Actor
	Pid          *uint32 `json:"pid,omitempty"`
	Uid          *uint32 `json:"uid,omitempty"`
	Comm         string  `json:"comm,omitempty"`           // fuse: the caller's command name
	Cgroup       string  `json:"cgroup,omitempty"`         // fuse: the caller's cgroup v2 path
	FoundAtStart bool    `json:"found_at_start,omitempty"` // external: found at start, made while the daemon was down
}

// SSEStarted is the data of the first SSE event, watch_started; SSEOverflow
// that of an overflow event.
type SSEStarted struct {
	WatcherID string `json:"watcher_id"`
	Cursor    uint64 `json:"cursor"`
}

// SSEShutdown is the data of the last SSE event when the daemon stops: the
// cursor to resume from once it is back.
type SSEShutdown struct {
	Reason string `json:"reason"`
	Cursor uint64 `json:"cursor"`
}

type SSEOverflow struct {
	WatcherID string `json:"watcher_id"`
	Cursor    uint64 `json:"cursor"`
	Overflow  bool   `json:"overflow"`
}

// wireEvent shapes e for a watcher of base (the watcher's path, or for a
// watched file the path itself). relative_path is e.Path relative to base:
// "" for base itself when base is a directory, the file's name when base is
// the watched file, and "../…" for the new path of a rename out of the tree.
func wireEvent(e journal.Event, base string, baseIsFile bool) WatchEvent {
	dir := base
	if baseIsFile {
		dir = path.Dir(base)
	}
	out := WatchEvent{
		Seq:          e.Seq,
		Type:         string(e.Type),
		Path:         e.Path,
		RelativePath: relPath(e.Path, dir),
		OldPath:      e.OldPath,
		IsDir:        e.IsDir,
		Size:         e.Size,
		Mtime:        unixFloat(e.Mtime),
		Inode:        e.Inode,
		Timestamp:    unixFloat(e.Time),
		Origin:       string(e.Origin),
		Actor:        e.Actor,
		Comm:         e.Comm,
		Cgroup:       e.Cgroup,
		FoundAtStart: e.FoundAtStart,
	}
	if e.Origin == journal.Mirror {
		pid, uid := e.Pid, e.Uid
		out.Pid, out.Uid = &pid, &uid
	}
	return out
}

func wireEvents(es []journal.Event, base string, baseIsFile bool) []WatchEvent {
	out := make([]WatchEvent, len(es))
	for i, e := range es {
		out[i] = wireEvent(e, base, baseIsFile)
	}
	return out
}

// relPath is the clean API path p relative to the clean API directory dir.
func relPath(p, dir string) string {
	if p == dir {
		return ""
	}
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	if strings.HasPrefix(p, dir+"/") {
		return p[len(dir)+1:]
	}
	// Outside dir: climb to the common ancestor.
	up, d := "", dir
	for d != "/" && p != d && !strings.HasPrefix(p, d+"/") {
		up += "../"
		d = path.Dir(d)
	}
	return up + relPath(p, d)
}

// unixFloat is t as Unix seconds with a fraction, 0 for the zero time.
func unixFloat(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// rfc3339 formats a creation time as the AIO daemon's datetime.isoformat
// would with a zone: RFC 3339 in UTC with microseconds.
func rfc3339(t time.Time) string {
	return t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")
}
