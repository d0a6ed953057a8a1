// Package httpkit is what the route families of sandfs's HTTP face share
// and nothing family-specific: the route line and handler types, the error
// vocabulary and its one translator (Classify), the query and body helpers,
// preconditions, the rule for names that are not UTF-8, and the header
// block every error answer carries. It may import core (and its
// subpackages), api and internal; never rest, nor any family package
// (rest/aio, rest/named, rest/agentfs), which all import it.
//
// # Errors
//
// Core returns *fs.PathError{Op, Path (API path), Err: unix.Errno}. One
// function, Classify in errors.go, turns any error a handler returns into an
// ErrKind: the kind of api.md §2 (not_found, already_exists,
// invalid_target, no_space_left, …) and its HTTP status, looking only at
// types and errnos (errors.As), never at message text. The op tells the two
// ENOTEMPTYs apart: on remove it is a non-empty directory (409
// invalid_target), on move a non-empty destination (409 already_exists).
// ENXIO and ENODEV (open(2) of a unix socket, a FIFO with no reader, a
// device with no driver) are invalid_target like EINVAL, which is what core
// reports for them anyway. Refusals the boundary makes itself (a missing
// parameter, a bad body, a wrong media type, no token) are RequestErrors
// and are classified the same way; a failure reading the request body is
// blamed on the client (400, or 413 over a limit), not on the disk.
//
// errors.go holds the whole vocabulary (the kinds, the error types of every
// family, Classify); each family renders an ErrKind in its own shape,
// beside its wire types, through WriteError, which writes the header block
// they share.
//
// # Queries and bodies
//
// Every family reads its query with the helpers of params.go and its JSON
// body with DecodeBody (body.go); both take or return what a family needs
// to word a refusal in its own dialect (a 400 invalid_request, or the AIO
// family's 422 validation errors). RequireJSON, which DecodeBody calls,
// refuses a body that does not say application/json (415; rest's browser
// guard says why).
//
// # Names that are not UTF-8
//
// A name that is not valid UTF-8 cannot be put in a JSON string or read
// back from one without becoming U+FFFD, which is the name of another
// possible file. names.go holds the rule: no answer reports such a name
// (core leaves it out of listings, walks and grep and counts it; the
// handler answers X-Sandfs-Skipped-Names: N), no request acts on one (a
// query or multipart path that is not UTF-8 is 400 invalid_path), and no
// watcher hears of one (journal.Reportable). An error met below such a
// name carries no path, and its message spells the bytes Go-quoted.
package httpkit
