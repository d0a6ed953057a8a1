package named

import "sandfs/rest/httpkit"

const authed = httpkit.Authed // every named route takes the token when one is configured

// Routes are the family's lines of the route table, in the table's order.
// The comment of each names its parameters (q: query, b: body).
func (s *Family) Routes() []httpkit.Line {
	n := httpkit.Shape{Name: httpkit.FamilyNamed, Render: Render}
	return []httpkit.Line{
		// Named sandboxes (api.md §5, the named-sandbox spec): every route under both prefixes; asRoot accepted and ignored.
		n.On("GET", "/v1/sandboxes/:name/fs/read", authed, s.namedRead),        // q: path, workingDir; Range → bytes
		n.On("GET", "/v1/sprites/:name/fs/read", authed, s.namedRead),          // q: path, workingDir; Range → bytes
		n.On("PUT", "/v1/sandboxes/:name/fs/write", authed, s.namedWrite),      // q: path, workingDir, mode, mkdir|mkdirParents; b: bytes ≤ 16 MiB → {path, size, mode}
		n.On("PUT", "/v1/sprites/:name/fs/write", authed, s.namedWrite),        // q: path, workingDir, mode, mkdir|mkdirParents; b: bytes ≤ 16 MiB → {path, size, mode}
		n.On("GET", "/v1/sandboxes/:name/fs/list", authed, s.namedList),        // q: path, workingDir, recursive, pattern → {path, entries, count}
		n.On("GET", "/v1/sprites/:name/fs/list", authed, s.namedList),          // q: path, workingDir, recursive, pattern → {path, entries, count}
		n.On("GET", "/v1/sandboxes/:name/fs/stat", authed, s.namedStat),        // q: path, workingDir → entry
		n.On("GET", "/v1/sprites/:name/fs/stat", authed, s.namedStat),          // q: path, workingDir → entry
		n.On("DELETE", "/v1/sandboxes/:name/fs/delete", authed, s.namedDelete), // q: path, workingDir, recursive (or b: the same) → {deleted, count}
		n.On("DELETE", "/v1/sprites/:name/fs/delete", authed, s.namedDelete),   // q: path, workingDir, recursive (or b: the same) → {deleted, count}
		n.On("POST", "/v1/sandboxes/:name/fs/rename", authed, s.namedRename),   // b: {source, dest, workingDir} → {source, dest}
		n.On("POST", "/v1/sprites/:name/fs/rename", authed, s.namedRename),     // b: {source, dest, workingDir} → {source, dest}
		n.On("POST", "/v1/sandboxes/:name/fs/copy", authed, s.namedCopy),       // b: {source, dest, workingDir, recursive, preserveAttrs} → {source, dest, count, totalBytes}
		n.On("POST", "/v1/sprites/:name/fs/copy", authed, s.namedCopy),         // b: {source, dest, workingDir, recursive, preserveAttrs} → {source, dest, count, totalBytes}
		n.On("POST", "/v1/sandboxes/:name/fs/chmod", authed, s.namedChmod),     // b: {path, mode, workingDir, recursive} → {path, mode, count}
		n.On("POST", "/v1/sprites/:name/fs/chmod", authed, s.namedChmod),       // b: {path, mode, workingDir, recursive} → {path, mode, count}
		n.On("POST", "/v1/sandboxes/:name/fs/chown", authed, s.namedChown),     // b: {path, uid, gid, workingDir, recursive} → {path, affected, count}
		n.On("POST", "/v1/sprites/:name/fs/chown", authed, s.namedChown),       // b: {path, uid, gid, workingDir, recursive} → {path, affected, count}
		n.On("GET", "/v1/sandboxes/:name/events", authed, s.namedEvents),       // q: since | last, limit, path, workingDir, actor, origin → {events, cursor, oldest, latest, overflow, more}
		n.On("GET", "/v1/sprites/:name/events", authed, s.namedEvents),         // q: as above
		n.On("GET", "/v1/sandboxes/:name/fs/watch", authed, s.namedWatch),      // websocket: subscribe → subscribed, event…, error
		n.On("GET", "/v1/sprites/:name/fs/watch", authed, s.namedWatch),        // websocket: subscribe → subscribed, event…, error
		// History (api.md §5, "Changes since a point"): the net change set since a seq, a time or a checkpoint.
		n.On("GET", "/v1/sandboxes/:name/changes", authed, s.namedChangesOf), // q: since (SEQ|TIME|cp_…), path, workingDir, actor, origin, diff, max_diff_bytes, limit → {since, untilSeq, lost, changes, count, truncated}
		n.On("GET", "/v1/sprites/:name/changes", authed, s.namedChangesOf),   // q: as above → as above

		// History (api.md §5a): checkpoints of the tree and restore, under both prefixes.
		n.On("POST", "/v1/sandboxes/:name/checkpoints", authed, s.namedCheckpointCreate),       // b: {name?, skipExcluded?} → 201 checkpoint {id, name, reason, seq, createdAt, files, dirs, symlinks, bytes, newBytes}
		n.On("GET", "/v1/sandboxes/:name/checkpoints", authed, s.namedCheckpointList),          // → {checkpoints: [checkpoint], count}, oldest first
		n.On("GET", "/v1/sandboxes/:name/checkpoints/:id", authed, s.namedCheckpointGet),       // → checkpoint; unknown id 404 ENOENT; being stored after a take-up 503
		n.On("DELETE", "/v1/sandboxes/:name/checkpoints/:id", authed, s.namedCheckpointDelete), // → {id, deleted: true}
		n.On("POST", "/v1/sandboxes/:name/restore", authed, s.namedRestore),                    // b: {checkpoint, paths?, actor?, dry_run?|dryRun?} → {checkpoint, dryRun, undo, written, removed, skipped: [{path, reason, by}], count}
		n.On("POST", "/v1/sprites/:name/checkpoints", authed, s.namedCheckpointCreate),         // b: {name?, skipExcluded?} → 201 checkpoint {id, name, reason, seq, createdAt, files, dirs, symlinks, bytes, newBytes}
		n.On("GET", "/v1/sprites/:name/checkpoints", authed, s.namedCheckpointList),            // → {checkpoints: [checkpoint], count}, oldest first
		n.On("GET", "/v1/sprites/:name/checkpoints/:id", authed, s.namedCheckpointGet),         // → checkpoint; unknown id 404 ENOENT; being stored after a take-up 503
		n.On("DELETE", "/v1/sprites/:name/checkpoints/:id", authed, s.namedCheckpointDelete),   // → {id, deleted: true}
		n.On("POST", "/v1/sprites/:name/restore", authed, s.namedRestore),                      // b: {checkpoint, paths?, actor?, dry_run?|dryRun?} → {checkpoint, dryRun, undo, written, removed, skipped: [{path, reason, by}], count}
	}
}
