package journal

import "unicode/utf8"

// Reportable is e as an API watcher may hear it, and whether it may hear
// it at all. An API path that is not valid UTF-8 cannot travel in JSON
// without turning into U+FFFD, the name of another file (core/names.go),
// so no watcher or subscription hears of one: an event on such a path is
// not offered, and a rename between such a path and a reportable one is
// told as what the watcher can see of it, the remove of its old path or
// the create of its new one (as a rename across the edge of a watched
// tree). The journal itself keeps every event as it came (hooks, and so
// the FUSE mirror, see the bytes).
func Reportable(e Event) (Event, bool) {
	okPath := utf8.ValidString(e.Path)
	okOld := e.OldPath == "" || utf8.ValidString(e.OldPath)
	switch {
	case okPath && okOld:
		return e, true
	case e.Type == Rename && okPath: // from an unreportable name
		e.Type, e.OldPath = Create, ""
		return e, true
	case e.Type == Rename && okOld && e.OldPath != "": // to an unreportable name
		e.Type, e.Path, e.OldPath = Remove, e.OldPath, ""
		return e, true
	}
	return e, false
}
