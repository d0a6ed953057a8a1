package aio

import "sandfs/rest/httpkit"

const authed = httpkit.Authed // every AIO route takes the token when one is configured

// Routes are the family's lines of the route table, in the table's order.
// The comment of each names its parameters (q: query, b: body).
func (s *Family) Routes() []httpkit.Line {
	v1 := httpkit.Shape{Name: httpkit.FamilyAIOv1, Render: RenderV1}
	v2 := httpkit.Shape{Name: httpkit.FamilyAIOv2, Render: RenderV2}
	return []httpkit.Line{
		// AIO watch (api.md §4, §6, the AIO spec): v2.
		v2.On("POST", "/v2/watch", authed, s.watchCreate),           // b: {path, recursive, debounce, exclude, include_patterns} → {watcher_id, path, status, created_at, reused, initial_cursor}
		v2.On("GET", "/v2/watch", authed, s.watchList),              // → {watchers, count}
		v2.On("GET", "/v2/watch/:id/poll", authed, s.watchPollV2),   // q: cursor, limit, timeout → {events, cursor, overflow}; Accept: text/event-stream → SSE
		v2.On("GET", "/v2/watch/:id/events", authed, s.watchEvents), // q: cursor; Last-Event-ID → SSE
		v2.On("DELETE", "/v2/watch/:id", authed, s.watchStop),       // → {watcher_id, status, subscribers}
		// AIO watch: v1 (the 1.x schema's models).
		v1.On("POST", "/v1/file/watch", authed, s.watchCreate),           // b: CreateWatchRequest → as v2
		v1.On("GET", "/v1/file/watch", authed, s.watchList),              // → as v2
		v1.On("POST", "/v1/file/watch/wait", authed, s.watchWait),        // b: {path, timeout, event_types} → the first matching event; 503 on timeout
		v1.On("POST", "/v1/file/watch/:id/poll", authed, s.watchPollV1),  // b: PollRequest {cursor, limit, timeout} → {events, cursor, overflow}
		v1.On("GET", "/v1/file/watch/:id/events", authed, s.watchEvents), // q: cursor; Last-Event-ID → SSE
		v1.On("DELETE", "/v1/file/watch/:id", authed, s.watchStop),       // → as v2

		// AIO files (part A): read, write, edit, stat, list, search, glob, mkdir, copy, move, delete, capabilities (api.md §4, the AIO spec).
		v2.On("GET", "/v2/fs/read", authed, s.readV2),                  // q: path, start_line, end_line (0-based, end exclusive) → {content, file}
		v1.On("POST", "/v1/file/read", authed, s.readV1),               // b: FileReadRequest {file, start_line, end_line} → FileReadResult
		v2.On("POST", "/v2/fs/write", authed, s.writeFile),             // q: user; b: {path, content, encoding, append, leading_newline, trailing_newline} → {file, bytes_written}
		v1.On("POST", "/v1/file/write", authed, s.writeFile),           // b: FileWriteRequest {file, content, encoding, …, user} → FileWriteResult
		v2.On("POST", "/v2/fs/edit", authed, s.editV2),                 // q: user; b: {command (str_replace|insert|undo_edit), path, old_str, new_str, insert_line, replace_mode} → {output, path, prev_exist, old_content, new_content}
		v1.On("POST", "/v1/file/str_replace_editor", authed, s.editV1), // b: StrReplaceEditorRequest (+ view, create) → StrReplaceEditorResult
		v1.On("POST", "/v1/file/replace", authed, s.replaceV1),         // b: FileReplaceRequest {file, old_str, new_str, replace_mode} → {file, replaced_count}
		v2.On("GET", "/v2/fs/stat", authed, s.statV2),                  // q: path, follow_symlinks (true) → {path, size, permissions, is_directory, is_symlink, modified_time}
		v1.On("POST", "/v1/file/stat", authed, s.statV1),               // b: {path, follow_symlinks} → as v2
		v2.On("GET", "/v2/fs/list", authed, s.listV2),                  // q: path, recursive, show_hidden, max_depth, include_size, include_permissions, sort_by, sort_desc, file_types → {path, files, total_count, file_count, directory_count, truncated}
		v1.On("POST", "/v1/file/list", authed, s.listV1),               // b: FileListRequest → FileListResult + truncated
		v2.On("GET", "/v2/fs/search", authed, s.searchV2),              // q: path, pattern (** globs) → {path, files, truncated}
		v1.On("POST", "/v1/file/find", authed, s.findV1),               // b: FileFindRequest {path, glob} → FileFindResult + truncated
		v1.On("POST", "/v1/file/glob", authed, s.globV1),               // b: FileGlobRequest {path, pattern, exclude, include_hidden, files_only, include_metadata, max_results, sort_by, sort_desc} → FileGlobResult
		v2.On("POST", "/v2/fs/mkdir", authed, s.mkdir),                 // q: user; b: {path, parents (true)} → {path, created}
		v1.On("POST", "/v1/file/mkdir", authed, s.mkdir),               // b: {path, parents, user} → as v2
		v2.On("POST", "/v2/fs/copy", authed, s.copyEntry),              // q: user; b: {source, destination, overwrite} → {source, destination, entries, bytes_copied}
		v1.On("POST", "/v1/file/copy", authed, s.copyEntry),            // b: {source, destination, overwrite, user} → as v2
		v2.On("POST", "/v2/fs/move", authed, s.moveEntry),              // b: {source, destination, overwrite} → {source, destination}
		v1.On("POST", "/v1/file/move", authed, s.moveEntry),            // b: as v2 → as v2
		v2.On("POST", "/v2/fs/delete", authed, s.deleteEntry),          // b: {path, recursive} → {path}
		v1.On("POST", "/v1/file/delete", authed, s.deleteEntry),        // b: as v2 → as v2
		v1.On("GET", "/v1/capabilities", authed, s.capabilitiesV1),     // → {files: {read, write, …: bool}, exec, browser, computer, code_interpreter}

		// AIO transfer (part B): grep, upload, download, tree, xattr (api.md §4, the AIO spec).
		v2.On("POST", "/v2/fs/grep", authed, s.grep),             // b: FileGrepRequest {path, pattern, include, exclude, type, …} → {path, pattern, matches, match_count, files_searched, files_matched, truncated}
		v1.On("POST", "/v1/file/grep", authed, s.grep),           // b: FileGrepRequest → as v2
		v1.On("POST", "/v1/file/search", authed, s.searchInFile), // b: FileSearchRequest {file, regex} → {file, matches, line_numbers (0-based)}
		v2.On("POST", "/v2/fs/upload", authed, s.upload),         // q: path, user; b: multipart {path, user, file} → {file_path, file_size, success}
		v1.On("POST", "/v1/file/upload", authed, s.upload),       // b: multipart Body_upload_file {file, path} → FileUploadResult
		v2.On("GET", "/v2/fs/download", authed, s.download),      // q: path, change_policy (ignore|abort); Range, If-Match → bytes (200/206)
		v2.On("HEAD", "/v2/fs/download", authed, s.download),     // q: path, change_policy → headers only
		v2.On("GET", "/v1/file/download", authed, s.download),    // q: path, change_policy → bytes; v2 statuses (missing is 404 on v1 too)
		v2.On("GET", "/v2/fs/tree", authed, s.treeGet),           // q: path → application/x-tar stream
		v2.On("PUT", "/v2/fs/tree", authed, s.treePut),           // q: path, mode (merge|rename), user; b: tar → {path, entries, mode}
		v2.On("GET", "/v2/fs/xattr", authed, s.xattrGet),         // q: path, name → {path, xattrs:{name: base64}}
		v2.On("PUT", "/v2/fs/xattr", authed, s.xattrSet),         // b: {path, name, value (base64)} → {path, xattrs}
		v2.On("DELETE", "/v2/fs/xattr", authed, s.xattrDelete),   // q: path, name → {path, xattrs}
	}
}
