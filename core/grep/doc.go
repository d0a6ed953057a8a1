// Package grep is the content search of a sandbox, the way ripgrep does
// it: [Run] searches a file, or a tree walked beneath the sandbox's root
// fd, for a client's regular expression or fixed string.
//
// # What it may import
//
// sandfs/core (the Sandbox and the small surface core exports for its
// subpackages: Root.OpenBeneath, OpenSubdir, PathErr, Unreportable),
// core/apipath, core/pathmatch and the standard library. core does not import grep; the
// search routes (rest) call it.
//
// # The walk
//
// Every directory is opened by fd from its parent with O_NOFOLLOW, never
// into another mount; symlinks are not followed (but for the path named in
// the request); names matching the excludes are pruned; binary files (a
// NUL in the first 8 KiB) and files over the size limit are skipped. A
// name that is not valid UTF-8 is left out and counted in the context's
// SkippedNames (core/names.go). Files are searched in parallel by a
// bounded set of workers, but the answer is deterministic: files in path
// order, lines in order.
//
// # Client patterns
//
// Every regular expression a client sends is compiled in pattern.go, under
// one set of bounds: a regex's program is at most [MaxPatternInsts]
// instructions, one search scans at most [MaxInputFor] bytes of a file
// (the product is [PatternWork]). Globs are checked by
// pathmatch.CheckGlob (at most pathmatch.MaxGlobLen bytes). A refusal is a
// *pathmatch.PatternError saying which bound and by how much. A line search rewrites its regex so
// no match holds a newline, which makes one pass over the data enough and
// lets it scan in windows that end at line ends.
//
// # Abandoned work
//
// A search looks at its context at every entry, every read and every
// 64 KiB window of a file, and returns the context's error once it ends,
// so work whose client hung up stops within a window rather than at the
// end.
package grep
