// Package pathmatch matches slash-separated relative paths ("a/b/c.go",
// relative to a walk's or a watcher's directory) against client patterns,
// and holds the names skipped by default. It imports nothing of sandfs.
//
// Every pattern is built of path.Match segments ("*", "?", "[...]"), and
// the package has one name for each way sandfs applies them:
//
//   - [Glob]: segment globs, one segment a component, where a segment "**"
//     matches zero or more whole components ("src/**/*.go"). The find and
//     glob routes and the named-sandbox listing use it.
//   - [InAnyComponent]: a pattern without "/" matches any one component
//     (".git" covers everything under a .git directory); one with "/"
//     matches the path or one of its ancestors. Watchers' excludes and the
//     AIO glob route's excludes use it.
//   - [BaseOrPath]: the pattern's form picks what it matches: without "/"
//     the base name, with one the whole path ("./" and leading "**/"
//     dropped). Grep's include, exclude and type globs use it, as ripgrep's
//     --glob.
//   - [BaseOrPathLoose]: the pattern is tried against the base name and
//     against the whole path as given, and a leading "**/" also matches the
//     base name. Watchers' include patterns use it.
//
// BaseOrPath and BaseOrPathLoose agree on the usual patterns ("*.go",
// "a/*.go", "**/*.go") and differ on a few: "./x", "/a/x" and "a/x/" match
// only under BaseOrPath, and "**/a/*.go" matches "a/x.go" under BaseOrPath,
// "b/a/x.go" under BaseOrPathLoose (pathmatch_test.go lists them).
//
// A client's glob is checked before any of them: [CheckGlob] (well formed,
// at most [MaxGlobLen] bytes) and [CompileGlob] (checked, then compiled).
// A refusal is a *[PatternError], the type package core/grep gives a
// regular expression it refuses too (check.go).
//
// [DefaultExcludes] are the names a watcher or a grep skips unless the
// client gives its own list (which then replaces it).
package pathmatch
