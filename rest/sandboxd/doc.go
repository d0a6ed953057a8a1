// Package sandboxd is the route family of the Kubernetes agent-sandbox
// runtime standard (KEP-539.2, "sandboxd"): the filesystem half of its
// REST API, packages/sandboxd/spec/filesystem/v1/filesystem.yaml of
// kubernetes-sigs/agent-sandbox (testdata/filesystem.yaml is a copy), on
// sandfs's core.
//
//   - GET /v1/files/*path: a file's bytes (application/octet-stream, with
//     Range and conditional requests), or a directory's listing
//     (application/json DirectoryListing), decided by what the path is.
//   - HEAD /v1/files/*path: the same headers, no body: 200 exists, 404 not.
//   - PUT /v1/files/*path: the body (raw, or the "file" part of a
//     multipart/form-data form) replaces the file atomically; parents are
//     created; ?mode=0NNN (default 0644) is its mode. 204.
//   - DELETE /v1/files/*path: ?recursive=true for a non-empty directory
//     (409 otherwise); the root is emptied, never removed. 204.
//   - GET /v1/metadata: {env}, the daemon's environment variables named
//     with EnvPrefix, without those whose name looks like a credential.
//   - GET /v1/watch?path&recursive&since: the KEP's Watch, which it
//     names without an HTTP shape: sandfs's proposal, the directory's
//     changes from the journal as server-sent events (watch.go).
//
// GET /v1/health, the standard's probe, is the service route rest already
// serves: rest's health answer carries uptime_seconds, and its 503 the
// {code, message} the standard gives its errors.
//
// Errors are the standard's {code, message}, code a gRPC canonical name
// as the reference daemon writes them (INVALID_ARGUMENT, PERMISSION_DENIED,
// NOT_FOUND, CONFLICT, …; Render).
//
// # Paths
//
// The path is relative to the sandbox root, whatever the sandbox's working
// directory; its segments are decoded ("%2F" is a separator). A path whose
// ".." climbs above the root is refused with 403 PERMISSION_DENIED, as the
// standard asks, where the other families clamp it at the root. Symlinks
// are resolved by core within the root, as if the root were "/": a link can
// never lead out of it (a link to /etc/passwd names the root's etc/passwd),
// so no symlink answers 403 for leaving the root: it answers what it
// resolves to inside, 404 when that is nothing. A listing shows a symlink
// as what it resolves to, and leaves out a link that resolves to nothing.
//
// The sandbox is the one the selector picks, as for the other unnamed
// families (X-Sandfs-Sandbox, ?sandbox=, the token's own, else "default").
// Writes go through core: the journal tells them with origin api and the
// actor of X-Sandfs-Actor.
package sandboxd
