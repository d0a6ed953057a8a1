package agentfs

import "sandfs/rest/httpkit"

const authed = httpkit.Authed // every sandbox-agent route takes the token when one is configured

// Routes are the family's lines of the route table, in the table's order.
// The comment of each names its parameters (q: query, b: body).
// sessionId/session_id is accepted and ignored on every route.
func (s *Family) Routes() []httpkit.Line {
	a := httpkit.Shape{Name: httpkit.FamilyAgent, Render: RenderProblem}
	return []httpkit.Line{
		// sandbox-agent (api.md §3, the sandbox-agent spec).
		a.On("GET", "/v1/fs/entries", authed, s.fsEntries),           // q: path (default ".") → [FsEntry]
		a.On("GET", "/v1/fs/file", authed, s.fsReadFile),             // q: path; Range → bytes
		a.On("PUT", "/v1/fs/file", authed, s.fsWriteFile),            // q: path; b: bytes → FsWriteResponse
		a.On("DELETE", "/v1/fs/entry", authed, s.fsDeleteEntry),      // q: path, recursive → FsActionResponse
		a.On("POST", "/v1/fs/mkdir", authed, s.fsMkdir),              // q: path → FsActionResponse
		a.On("POST", "/v1/fs/move", authed, s.fsMove),                // b: {from,to,overwrite} → FsMoveResponse
		a.On("GET", "/v1/fs/stat", authed, s.fsStat),                 // q: path → FsStat
		a.On("POST", "/v1/fs/upload-batch", authed, s.fsUploadBatch), // q: path (default "."); b: tar → FsUploadBatchResponse
	}
}
