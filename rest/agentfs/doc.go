// Package agentfs is the sandbox-agent family of sandfs's HTTP face: the
// eight /v1/fs/* routes of the sandbox-agent spec, with its wire types to
// the field, so that its clients work against sandfs unchanged. It may
// import the shared kit (rest/httpkit), core and its subpackages, api and
// internal; never rest (which imports it and composes Family.Routes into
// its one route table), another family, daemon, natsout, fusefs or cmd.
//
// routes.go holds the family's lines of the table; agentfs.go the
// handlers; types.go the wire types and the error shape; fastjson.go the
// hot answers (stat, small reads) encoded without reflection, byte for
// byte what encoding/json writes.
//
// # Errors
//
// The family writes application/problem+json {type:
// "urn:sandbox-agent:error:<kind>", title, status, detail} with the kinds
// of its own enum (RenderProblem); where that enum has no kind (a full
// disk, a body over a limit, an unknown failure) the status stays true
// (507, 413, 500) under stream_error or invalid_request. A missing or
// wrong token is token_invalid. rest's service routes, and the refusals
// made before any route, speak the same shape.
//
// # Limits
//
// PUT /v1/fs/file has no cap but the disk (507): it streams into
// core.WriteFile and never holds the file in memory. A listing stops at
// MaxEntries (header X-Sandfs-Truncated: true), an upload-batch answer at
// 1024 paths (truncated: true).
package agentfs
