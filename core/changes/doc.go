// Package changes answers "what changed since then": the net change set
// of a sandbox's tree between a start point and now, one row per path,
// folded from the journal, checked against the tree, with unified diffs.
//
// # What it may import
//
// sandfs/core (the Sandbox and its journal, and from
// core/subpackages.go OpenBeneath, UnheardNear and ErrnoOf),
// core/checkpoint (a checkpoint as the start point and the old side of a
// diff), core/journal, core/linediff and the standard library. core does not
// import changes; the named routes (rest) call it.
//
// # Changes since a point
//
// [Since] is the net change set of the tree between a start
// point (a seq, a time, a checkpoint, or the making of a fork) and now,
// one row per path, folded from the journal (fold.go), checked against the
// tree as it is, with optional unified diffs (diff.go).
//
// Since a fork's making ([Fork]), the events are the fork's whole journal,
// which begins with the fork; what existed then, and the old side of the
// diffs, is the parent's checkpoint the fork was made from, read through
// the parent (the caller names it: changes knows no forks). The overlay's
// upper directory is never read: it would miss nothing the journal tells,
// but would cost a walk and could not say who changed what.
//
// The rules of the fold, per path (a path's state moves with its content
// on a rename):
//   - created then removed: no row;
//   - created (then written, chmodded): added;
//   - a path that existed at the start (its first event is not a create)
//     written or chmodded: modified; removed: deleted; removed and made
//     again: modified;
//   - renamed a→b: one row b "renamed" from a (none for a); when a was
//     itself added since, b is "added"; a chain a→b→c is c renamed from a;
//     moved away and back unchanged is no row; writes after a rename keep
//     it renamed; a rename over an existing b replaces b's content (b's
//     earlier content, if it was another start-point path's, is deleted);
//   - a rename whose source is unknown (an outside rename inotify could
//     not pair) is new content at its target, as a create;
//   - a directory rename moves every row under it; a directory remove
//     removes every row under it;
//   - a path whose first event makes it a rename's target is taken as not
//     existing at the start (the event cannot tell an overwrite), so a save
//     by rename (write a temp file, rename it over the file) is "added",
//     unless a checkpoint at the start point (see diff.go) holds
//     the path: then it is "modified".
//
// Who and when go with the content too: a row's First and Last are the
// first and last events of what it is now (a rename target's include its
// source's), Events how many, Actors the distinct who-labels in order of
// appearance. Then each row is checked against the tree, beneath the root
// without following symlinks: a row added whose path is gone is dropped, a
// row modified or renamed whose path is gone is deleted (at its start-point
// path), a deleted path that exists again is modified; Size and IsDir are
// the tree's.
//
// The filters pick rows, never events (a row kept shows all its actors):
// Path keeps the rows at or under it (a renamed row by either of its
// paths); Actor those with an event by that who-label, which is an api
// actor's name ("api" for a request that named none), "fuse:COMM" for a
// process on the mount ("fuse" when its command is unknown) or
// "external"; Origin those with an event of that origin. Limit rows
// (default 10,000, at most 100,000) are given in path order, Truncated
// when more were left. Lost says events after the start point are no
// longer kept, so rows may be missing; since the oldest kept event (no
// start point) is never lost. Diffs, their old side and their bounds:
// diff.go.
package changes
