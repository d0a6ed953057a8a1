package aio

import "sandfs/rest/httpkit"

// Family serves the AIO routes over the sandboxes of the server that hosts
// it.
type Family struct {
	host      httpkit.Host
	limits    httpkit.Limits
	fileState aioFiles // files.go: limits and the editor's undo history
}

// New is the family served by host.
func New(host httpkit.Host) *Family {
	return &Family{host: host, limits: host.Limits()}
}

// SetFileLimits replaces the file routes' limits (tests shrink them). It
// must be called before the first request.
func (s *Family) SetFileLimits(l FileLimits) { s.fileState.limits = l }

// UndoDepth is how many edits of the file at API path p the editor can
// undo.
func (s *Family) UndoDepth(p string) int { return s.files().undo.depth(p) }
