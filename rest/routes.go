package rest

import (
	"context"
	"net/http"
	"sandfs/rest/httpkit"
	"time"

	"github.com/julienschmidt/httprouter"
)

type route struct {
	Route
	h httpkit.HandlerFunc
}

const (
	public = false // no token needed
	authed = true  // token needed when one is configured
)

// table is the one route table. One line a route; the comment names its
// parameters (q: query, b: body). sessionId/session_id is accepted and
// ignored on every /v1/fs route.
func (s *Server) table() []route {
	return []route{
		// Service (api.md §1).
		{httpkit.NewRoute("GET", "/health", FamilyService, public), s.health},           // → {"status":"ok"}
		{httpkit.NewRoute("GET", "/v1/health", FamilyService, public), s.health},        // → {"status":"ok"}
		{httpkit.NewRoute("GET", "/v1/ping", FamilyService, public), s.ping},            // → {"status":"ok"}
		{httpkit.NewRoute("GET", "/openapi.json", FamilyService, authed), s.openapiDoc}, // → OpenAPI 3.1 document
		{httpkit.NewRoute("GET", "/metrics", FamilyService, authed), s.metrics},         // → Prometheus text (metrics.go)

		// Web console (ui.go): the page (GET /ui/), its scripts and style sheet, embedded; public (they carry no data). GET /ui → 301 /ui/.
		{httpkit.NewRoute("GET", "/ui/*file", FamilyService, public), s.uiAsset}, // → an embedded file; anything else 404

		// sandbox-agent (api.md §3, the sandbox-agent spec).
		{httpkit.NewRoute("GET", "/v1/fs/entries", FamilyAgent, authed), s.fsEntries},           // q: path (default ".") → [FsEntry]
		{httpkit.NewRoute("GET", "/v1/fs/file", FamilyAgent, authed), s.fsReadFile},             // q: path; Range → bytes
		{httpkit.NewRoute("PUT", "/v1/fs/file", FamilyAgent, authed), s.fsWriteFile},            // q: path; b: bytes → FsWriteResponse
		{httpkit.NewRoute("DELETE", "/v1/fs/entry", FamilyAgent, authed), s.fsDeleteEntry},      // q: path, recursive → FsActionResponse
		{httpkit.NewRoute("POST", "/v1/fs/mkdir", FamilyAgent, authed), s.fsMkdir},              // q: path → FsActionResponse
		{httpkit.NewRoute("POST", "/v1/fs/move", FamilyAgent, authed), s.fsMove},                // b: {from,to,overwrite} → FsMoveResponse
		{httpkit.NewRoute("GET", "/v1/fs/stat", FamilyAgent, authed), s.fsStat},                 // q: path → FsStat
		{httpkit.NewRoute("POST", "/v1/fs/upload-batch", FamilyAgent, authed), s.fsUploadBatch}, // q: path (default "."); b: tar → FsUploadBatchResponse

		// AIO watch (api.md §4, §6, the AIO spec): v2.
		{httpkit.NewRoute("POST", "/v2/watch", FamilyAIOv2, authed), s.watchCreate},           // b: {path, recursive, debounce, exclude, include_patterns} → {watcher_id, path, status, created_at, reused, initial_cursor}
		{httpkit.NewRoute("GET", "/v2/watch", FamilyAIOv2, authed), s.watchList},              // → {watchers, count}
		{httpkit.NewRoute("GET", "/v2/watch/:id/poll", FamilyAIOv2, authed), s.watchPollV2},   // q: cursor, limit, timeout → {events, cursor, overflow}; Accept: text/event-stream → SSE
		{httpkit.NewRoute("GET", "/v2/watch/:id/events", FamilyAIOv2, authed), s.watchEvents}, // q: cursor; Last-Event-ID → SSE
		{httpkit.NewRoute("DELETE", "/v2/watch/:id", FamilyAIOv2, authed), s.watchStop},       // → {watcher_id, status, subscribers}
		// AIO watch: v1 (the 1.x schema's models).
		{httpkit.NewRoute("POST", "/v1/file/watch", FamilyAIOv1, authed), s.watchCreate},           // b: CreateWatchRequest → as v2
		{httpkit.NewRoute("GET", "/v1/file/watch", FamilyAIOv1, authed), s.watchList},              // → as v2
		{httpkit.NewRoute("POST", "/v1/file/watch/wait", FamilyAIOv1, authed), s.watchWait},        // b: {path, timeout, event_types} → the first matching event; 503 on timeout
		{httpkit.NewRoute("POST", "/v1/file/watch/:id/poll", FamilyAIOv1, authed), s.watchPollV1},  // b: PollRequest {cursor, limit, timeout} → {events, cursor, overflow}
		{httpkit.NewRoute("GET", "/v1/file/watch/:id/events", FamilyAIOv1, authed), s.watchEvents}, // q: cursor; Last-Event-ID → SSE
		{httpkit.NewRoute("DELETE", "/v1/file/watch/:id", FamilyAIOv1, authed), s.watchStop},       // → as v2

		// AIO files (part A): read, write, edit, stat, list, search, glob, mkdir, copy, move, delete, capabilities (api.md §4, the AIO spec).
		{httpkit.NewRoute("GET", "/v2/fs/read", FamilyAIOv2, authed), s.readV2},                  // q: path, start_line, end_line (0-based, end exclusive) → {content, file}
		{httpkit.NewRoute("POST", "/v1/file/read", FamilyAIOv1, authed), s.readV1},               // b: FileReadRequest {file, start_line, end_line} → FileReadResult
		{httpkit.NewRoute("POST", "/v2/fs/write", FamilyAIOv2, authed), s.writeFile},             // q: user; b: {path, content, encoding, append, leading_newline, trailing_newline} → {file, bytes_written}
		{httpkit.NewRoute("POST", "/v1/file/write", FamilyAIOv1, authed), s.writeFile},           // b: FileWriteRequest {file, content, encoding, …, user} → FileWriteResult
		{httpkit.NewRoute("POST", "/v2/fs/edit", FamilyAIOv2, authed), s.editV2},                 // q: user; b: {command (str_replace|insert|undo_edit), path, old_str, new_str, insert_line, replace_mode} → {output, path, prev_exist, old_content, new_content}
		{httpkit.NewRoute("POST", "/v1/file/str_replace_editor", FamilyAIOv1, authed), s.editV1}, // b: StrReplaceEditorRequest (+ view, create) → StrReplaceEditorResult
		{httpkit.NewRoute("POST", "/v1/file/replace", FamilyAIOv1, authed), s.replaceV1},         // b: FileReplaceRequest {file, old_str, new_str, replace_mode} → {file, replaced_count}
		{httpkit.NewRoute("GET", "/v2/fs/stat", FamilyAIOv2, authed), s.statV2},                  // q: path, follow_symlinks (true) → {path, size, permissions, is_directory, is_symlink, modified_time}
		{httpkit.NewRoute("POST", "/v1/file/stat", FamilyAIOv1, authed), s.statV1},               // b: {path, follow_symlinks} → as v2
		{httpkit.NewRoute("GET", "/v2/fs/list", FamilyAIOv2, authed), s.listV2},                  // q: path, recursive, show_hidden, max_depth, include_size, include_permissions, sort_by, sort_desc, file_types → {path, files, total_count, file_count, directory_count, truncated}
		{httpkit.NewRoute("POST", "/v1/file/list", FamilyAIOv1, authed), s.listV1},               // b: FileListRequest → FileListResult + truncated
		{httpkit.NewRoute("GET", "/v2/fs/search", FamilyAIOv2, authed), s.searchV2},              // q: path, pattern (** globs) → {path, files, truncated}
		{httpkit.NewRoute("POST", "/v1/file/find", FamilyAIOv1, authed), s.findV1},               // b: FileFindRequest {path, glob} → FileFindResult + truncated
		{httpkit.NewRoute("POST", "/v1/file/glob", FamilyAIOv1, authed), s.globV1},               // b: FileGlobRequest {path, pattern, exclude, include_hidden, files_only, include_metadata, max_results, sort_by, sort_desc} → FileGlobResult
		{httpkit.NewRoute("POST", "/v2/fs/mkdir", FamilyAIOv2, authed), s.mkdir},                 // q: user; b: {path, parents (true)} → {path, created}
		{httpkit.NewRoute("POST", "/v1/file/mkdir", FamilyAIOv1, authed), s.mkdir},               // b: {path, parents, user} → as v2
		{httpkit.NewRoute("POST", "/v2/fs/copy", FamilyAIOv2, authed), s.copyEntry},              // q: user; b: {source, destination, overwrite} → {source, destination, entries, bytes_copied}
		{httpkit.NewRoute("POST", "/v1/file/copy", FamilyAIOv1, authed), s.copyEntry},            // b: {source, destination, overwrite, user} → as v2
		{httpkit.NewRoute("POST", "/v2/fs/move", FamilyAIOv2, authed), s.moveEntry},              // b: {source, destination, overwrite} → {source, destination}
		{httpkit.NewRoute("POST", "/v1/file/move", FamilyAIOv1, authed), s.moveEntry},            // b: as v2 → as v2
		{httpkit.NewRoute("POST", "/v2/fs/delete", FamilyAIOv2, authed), s.deleteEntry},          // b: {path, recursive} → {path}
		{httpkit.NewRoute("POST", "/v1/file/delete", FamilyAIOv1, authed), s.deleteEntry},        // b: as v2 → as v2
		{httpkit.NewRoute("GET", "/v1/capabilities", FamilyAIOv1, authed), s.capabilitiesV1},     // → {files: {read, write, …: bool}, exec, browser, computer, code_interpreter}

		// AIO transfer (part B): grep, upload, download, tree, xattr (api.md §4, the AIO spec).
		{httpkit.NewRoute("POST", "/v2/fs/grep", FamilyAIOv2, authed), s.grep},             // b: FileGrepRequest {path, pattern, include, exclude, type, …} → {path, pattern, matches, match_count, files_searched, files_matched, truncated}
		{httpkit.NewRoute("POST", "/v1/file/grep", FamilyAIOv1, authed), s.grep},           // b: FileGrepRequest → as v2
		{httpkit.NewRoute("POST", "/v1/file/search", FamilyAIOv1, authed), s.searchInFile}, // b: FileSearchRequest {file, regex} → {file, matches, line_numbers (0-based)}
		{httpkit.NewRoute("POST", "/v2/fs/upload", FamilyAIOv2, authed), s.upload},         // q: path, user; b: multipart {path, user, file} → {file_path, file_size, success}
		{httpkit.NewRoute("POST", "/v1/file/upload", FamilyAIOv1, authed), s.upload},       // b: multipart Body_upload_file {file, path} → FileUploadResult
		{httpkit.NewRoute("GET", "/v2/fs/download", FamilyAIOv2, authed), s.download},      // q: path, change_policy (ignore|abort); Range, If-Match → bytes (200/206)
		{httpkit.NewRoute("HEAD", "/v2/fs/download", FamilyAIOv2, authed), s.download},     // q: path, change_policy → headers only
		{httpkit.NewRoute("GET", "/v1/file/download", FamilyAIOv2, authed), s.download},    // q: path, change_policy → bytes; v2 statuses (missing is 404 on v1 too)
		{httpkit.NewRoute("GET", "/v2/fs/tree", FamilyAIOv2, authed), s.treeGet},           // q: path → application/x-tar stream
		{httpkit.NewRoute("PUT", "/v2/fs/tree", FamilyAIOv2, authed), s.treePut},           // q: path, mode (merge|rename), user; b: tar → {path, entries, mode}
		{httpkit.NewRoute("GET", "/v2/fs/xattr", FamilyAIOv2, authed), s.xattrGet},         // q: path, name → {path, xattrs:{name: base64}}
		{httpkit.NewRoute("PUT", "/v2/fs/xattr", FamilyAIOv2, authed), s.xattrSet},         // b: {path, name, value (base64)} → {path, xattrs}
		{httpkit.NewRoute("DELETE", "/v2/fs/xattr", FamilyAIOv2, authed), s.xattrDelete},   // q: path, name → {path, xattrs}

		// The sandboxes themselves (sandfs's own, api.md §5 "The sandboxes"; sandboxes.go): list (the console's picker), create, quota, remove.
		{httpkit.NewRoute("GET", "/v1/sandboxes", FamilyNamed, authed), s.listSandboxes},          // → {sandboxes: [{name, usage: {bytes, entries}, quota: {bytes, entries}}], count}, "default" first
		{httpkit.NewRoute("GET", "/v1/sprites", FamilyNamed, authed), s.listSandboxes},            // → as above
		{httpkit.NewRoute("POST", "/v1/sandboxes", FamilyNamed, authed), s.createSandbox},         // b: {name, quota?: {bytes?, entries?}} → 201 {name, token, quota}
		{httpkit.NewRoute("POST", "/v1/sprites", FamilyNamed, authed), s.createSandbox},           // b: as above → as above
		{httpkit.NewRoute("PATCH", "/v1/sandboxes/:name", FamilyNamed, authed), s.patchSandbox},   // b: {quota: {bytes?, entries?}} → {name, quota, usage}
		{httpkit.NewRoute("PATCH", "/v1/sprites/:name", FamilyNamed, authed), s.patchSandbox},     // b: as above → as above
		{httpkit.NewRoute("DELETE", "/v1/sandboxes/:name", FamilyNamed, authed), s.deleteSandbox}, // → {name, removed: true}
		{httpkit.NewRoute("DELETE", "/v1/sprites/:name", FamilyNamed, authed), s.deleteSandbox},   // → as above

		// Named sandboxes (api.md §5, the named-sandbox spec): every route under both prefixes; asRoot accepted and ignored.
		{httpkit.NewRoute("GET", "/v1/sandboxes/:name/fs/read", FamilyNamed, authed), s.namedRead},        // q: path, workingDir; Range → bytes
		{httpkit.NewRoute("GET", "/v1/sprites/:name/fs/read", FamilyNamed, authed), s.namedRead},          // q: path, workingDir; Range → bytes
		{httpkit.NewRoute("PUT", "/v1/sandboxes/:name/fs/write", FamilyNamed, authed), s.namedWrite},      // q: path, workingDir, mode, mkdir|mkdirParents; b: bytes ≤ 16 MiB → {path, size, mode}
		{httpkit.NewRoute("PUT", "/v1/sprites/:name/fs/write", FamilyNamed, authed), s.namedWrite},        // q: path, workingDir, mode, mkdir|mkdirParents; b: bytes ≤ 16 MiB → {path, size, mode}
		{httpkit.NewRoute("GET", "/v1/sandboxes/:name/fs/list", FamilyNamed, authed), s.namedList},        // q: path, workingDir, recursive, pattern → {path, entries, count}
		{httpkit.NewRoute("GET", "/v1/sprites/:name/fs/list", FamilyNamed, authed), s.namedList},          // q: path, workingDir, recursive, pattern → {path, entries, count}
		{httpkit.NewRoute("GET", "/v1/sandboxes/:name/fs/stat", FamilyNamed, authed), s.namedStat},        // q: path, workingDir → entry
		{httpkit.NewRoute("GET", "/v1/sprites/:name/fs/stat", FamilyNamed, authed), s.namedStat},          // q: path, workingDir → entry
		{httpkit.NewRoute("DELETE", "/v1/sandboxes/:name/fs/delete", FamilyNamed, authed), s.namedDelete}, // q: path, workingDir, recursive (or b: the same) → {deleted, count}
		{httpkit.NewRoute("DELETE", "/v1/sprites/:name/fs/delete", FamilyNamed, authed), s.namedDelete},   // q: path, workingDir, recursive (or b: the same) → {deleted, count}
		{httpkit.NewRoute("POST", "/v1/sandboxes/:name/fs/rename", FamilyNamed, authed), s.namedRename},   // b: {source, dest, workingDir} → {source, dest}
		{httpkit.NewRoute("POST", "/v1/sprites/:name/fs/rename", FamilyNamed, authed), s.namedRename},     // b: {source, dest, workingDir} → {source, dest}
		{httpkit.NewRoute("POST", "/v1/sandboxes/:name/fs/copy", FamilyNamed, authed), s.namedCopy},       // b: {source, dest, workingDir, recursive, preserveAttrs} → {source, dest, count, totalBytes}
		{httpkit.NewRoute("POST", "/v1/sprites/:name/fs/copy", FamilyNamed, authed), s.namedCopy},         // b: {source, dest, workingDir, recursive, preserveAttrs} → {source, dest, count, totalBytes}
		{httpkit.NewRoute("POST", "/v1/sandboxes/:name/fs/chmod", FamilyNamed, authed), s.namedChmod},     // b: {path, mode, workingDir, recursive} → {path, mode, count}
		{httpkit.NewRoute("POST", "/v1/sprites/:name/fs/chmod", FamilyNamed, authed), s.namedChmod},       // b: {path, mode, workingDir, recursive} → {path, mode, count}
		{httpkit.NewRoute("POST", "/v1/sandboxes/:name/fs/chown", FamilyNamed, authed), s.namedChown},     // b: {path, uid, gid, workingDir, recursive} → {path, affected, count}
		{httpkit.NewRoute("POST", "/v1/sprites/:name/fs/chown", FamilyNamed, authed), s.namedChown},       // b: {path, uid, gid, workingDir, recursive} → {path, affected, count}
		{httpkit.NewRoute("GET", "/v1/sandboxes/:name/events", FamilyNamed, authed), s.namedEvents},       // q: since | last, limit, path, workingDir, actor, origin → {events, cursor, oldest, latest, overflow, more}
		{httpkit.NewRoute("GET", "/v1/sprites/:name/events", FamilyNamed, authed), s.namedEvents},         // q: as above
		{httpkit.NewRoute("GET", "/v1/sandboxes/:name/fs/watch", FamilyNamed, authed), s.namedWatch},      // websocket: subscribe → subscribed, event…, error
		{httpkit.NewRoute("GET", "/v1/sprites/:name/fs/watch", FamilyNamed, authed), s.namedWatch},        // websocket: subscribe → subscribed, event…, error
		// History (api.md §5, "Changes since a point"): the net change set since a seq, a time or a checkpoint.
		{httpkit.NewRoute("GET", "/v1/sandboxes/:name/changes", FamilyNamed, authed), s.namedChangesOf}, // q: since (SEQ|TIME|cp_…), path, workingDir, actor, origin, diff, max_diff_bytes, limit → {since, untilSeq, lost, changes, count, truncated}
		{httpkit.NewRoute("GET", "/v1/sprites/:name/changes", FamilyNamed, authed), s.namedChangesOf},   // q: as above → as above

		// History (api.md §5a): checkpoints of the tree and restore, under both prefixes.
		{httpkit.NewRoute("POST", "/v1/sandboxes/:name/checkpoints", FamilyNamed, authed), s.namedCheckpointCreate},       // b: {name?, skipExcluded?} → 201 checkpoint {id, name, reason, seq, createdAt, files, dirs, symlinks, bytes, newBytes}
		{httpkit.NewRoute("GET", "/v1/sandboxes/:name/checkpoints", FamilyNamed, authed), s.namedCheckpointList},          // → {checkpoints: [checkpoint], count}, oldest first
		{httpkit.NewRoute("GET", "/v1/sandboxes/:name/checkpoints/:id", FamilyNamed, authed), s.namedCheckpointGet},       // → checkpoint; unknown id 404 ENOENT
		{httpkit.NewRoute("DELETE", "/v1/sandboxes/:name/checkpoints/:id", FamilyNamed, authed), s.namedCheckpointDelete}, // → {id, deleted: true}
		{httpkit.NewRoute("POST", "/v1/sandboxes/:name/restore", FamilyNamed, authed), s.namedRestore},                    // b: {checkpoint, paths?, actor?, dry_run?|dryRun?} → {checkpoint, dryRun, undo, written, removed, skipped: [{path, reason, by}], count}
		{httpkit.NewRoute("POST", "/v1/sprites/:name/checkpoints", FamilyNamed, authed), s.namedCheckpointCreate},         // b: {name?, skipExcluded?} → 201 checkpoint {id, name, reason, seq, createdAt, files, dirs, symlinks, bytes, newBytes}
		{httpkit.NewRoute("GET", "/v1/sprites/:name/checkpoints", FamilyNamed, authed), s.namedCheckpointList},            // → {checkpoints: [checkpoint], count}, oldest first
		{httpkit.NewRoute("GET", "/v1/sprites/:name/checkpoints/:id", FamilyNamed, authed), s.namedCheckpointGet},         // → checkpoint; unknown id 404 ENOENT
		{httpkit.NewRoute("DELETE", "/v1/sprites/:name/checkpoints/:id", FamilyNamed, authed), s.namedCheckpointDelete},   // → {id, deleted: true}
		{httpkit.NewRoute("POST", "/v1/sprites/:name/restore", FamilyNamed, authed), s.namedRestore},                      // b: {checkpoint, paths?, actor?, dry_run?|dryRun?} → {checkpoint, dryRun, undo, written, removed, skipped: [{path, reason, by}], count}
	}
}

// handle wraps a route's handler: recover, the browser guard (Host and
// Origin, browser.go), then serve, with any error rendered in the route's
// family shape.
func (s *Server) handle(rt route) httprouter.Handle {
	fam := familyOf(rt.Family)
	st := newRouteStats(rt.Route)
	s.stats = append(s.stats, st)
	sel := routeSelector(rt.Route)
	return func(w http.ResponseWriter, r *http.Request, ps httprouter.Params) {
		start := time.Now()
		tw := &trackingWriter{ResponseWriter: w}
		var body *countingBody
		if r.Body != nil && r.Body != http.NoBody {
			body = &countingBody{ReadCloser: r.Body}
			r.Body = body
		}
		defer func() {
			var in int64
			if body != nil {
				in = body.n
			}
			st.done(tw.status, in, tw.n, time.Since(start))
		}()
		defer s.recoverPanic(tw, r, fam, rt.Path)
		if err := s.browser.check(r); err != nil {
			s.fail(tw, r, fam, rt.Path, err)
			return
		}
		s.browser.allowPage(tw, r)
		if err := s.serve(tw, r, rt, sel, ps); err != nil {
			s.fail(tw, r, fam, rt.Path, err)
		}
		drainBody(tw, r, body) // the answer reaches a client that sends its whole body first
	}
}

// serve is a request past the browser guard: the sandbox it names
// (selector.go), auth and the token's scope (auth.go), the actor header
// (actor.go), the sandbox it acts on, held until the handler returns, then
// the handler.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, rt route, sel selectorKind, ps httprouter.Params) error {
	named, nameErr := namedSandbox(sel, r, ps)
	own, err := s.authorize(r, rt.Route, sel, named)
	if err != nil {
		return err // 401 before a bad selector's 400
	}
	if nameErr != nil {
		return nameErr
	}
	if own != "" && sel == selectNone {
		// Only a route on no sandbox (the list) asks whose token it was:
		// a route on a sandbox already acts on the token's own.
		r = r.WithContext(context.WithValue(r.Context(), tokenSandboxKey{}, own))
	}
	if r, err = withActor(r); err != nil {
		return err
	}
	r, held, err := s.withSandbox(r, sel, actsOn(sel, named, own))
	if err != nil {
		return err
	}
	if held != nil {
		defer held.release()
	}
	return rt.h(w, r, ps)
}
