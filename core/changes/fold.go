package changes

import (
	"sort"
	"strings"

	"sandfs/core/journal"
)

// The fold of changes-since (changes.go): the journal's events after the
// start point, folded per path into what each path is now against what it
// was then. It is one pass with one map; an event allocates nothing but the
// state of a path it is the first to touch (and, rarely, a new actor).

// foldState is what the fold knows of one path.
type foldState struct {
	path    string
	base    bool   // the path existed at the start point (its first event was not a create)
	now     bool   // it exists after the last event
	ident   string // the start-point path whose content it holds now; "" new content
	touched bool   // content or mode changed since (create, write, chmod)
	maybe   bool   // first told as a rename's target: it may have existed at the start
	isDir   bool
	size    int64
	stats   foldStats
}

// foldStats is who and when, carried with a path's content (a rename moves
// them): the first and last events, how many, who, and the filters' hits.
type foldStats struct {
	first, last journal.Event
	events      int
	actors      []actorSeen
	byActor     bool // some event is by Query.Actor
	byOrigin    bool // some event has Query.Origin
}

// actorSeen is one who-label, kept unbuilt (the label is made once, at the
// end), with the first seq it was seen at for the order of appearance.
type actorSeen struct {
	origin journal.Origin
	name   string // api: the actor's name; fuse: the command name
	seq    uint64
}

// label is the who-label of a row's Actors: an api actor's name ("api"
// when unnamed), "fuse:COMM" ("fuse" when the command is unknown),
// "external".
func (a actorSeen) label() string {
	switch {
	case a.origin == journal.API && a.name != "":
		return a.name
	case a.origin == journal.Mirror && a.name != "":
		return "fuse:" + a.name
	}
	return string(a.origin)
}

// matchesActor reports whether e is by the actor a Query names: its
// label, or an api event's own name.
func matchesActor(e *journal.Event, actor string) bool {
	switch e.Origin {
	case journal.API:
		if e.Actor == "" {
			return actor == string(journal.API)
		}
		return e.Actor == actor
	case journal.Mirror:
		if e.Comm == "" {
			return actor == string(journal.Mirror)
		}
		return len(actor) == len("fuse:")+len(e.Comm) && strings.HasPrefix(actor, "fuse:") && actor[len("fuse:"):] == e.Comm
	}
	return actor == string(e.Origin)
}

func actorOfEvent(e *journal.Event) actorSeen {
	a := actorSeen{origin: e.Origin, seq: e.Seq}
	switch e.Origin {
	case journal.API:
		a.name = e.Actor
	case journal.Mirror:
		a.name = e.Comm
	}
	return a
}

// folder folds events; q's Actor and Origin are the filters it marks.
type folder struct {
	states map[string]*foldState
	actor  string
	origin journal.Origin
}

func newFolder(q *Query) *folder {
	return &folder{states: make(map[string]*foldState, 1024), actor: q.Actor, origin: q.Origin}
}

// get is the state of p, made on p's first event: a path first told by a
// create or as a rename's target did not exist at the start point; any
// other first event says it did.
func (f *folder) get(p string, existed bool) *foldState {
	st := f.states[p]
	if st == nil {
		st = &foldState{path: p, base: existed, now: existed}
		if existed {
			st.ident = p
		}
		f.states[p] = st
	}
	return st
}

// target is the state of a rename's target p: when p is new to the fold,
// whether it existed at the start is not known (the event cannot tell an
// overwrite), and it is taken as not.
func (f *folder) target(p string) *foldState {
	if st := f.states[p]; st != nil {
		return st
	}
	st := f.get(p, false)
	st.maybe = true
	return st
}

// credit counts e in st's stats.
func (f *folder) credit(st *foldState, e *journal.Event) {
	s := &st.stats
	if s.events == 0 {
		s.first = *e
	}
	s.last = *e
	s.events++
	a := actorOfEvent(e)
	seen := false
	for _, b := range s.actors {
		if b.origin == a.origin && b.name == a.name {
			seen = true
			break
		}
	}
	if !seen {
		s.actors = append(s.actors, a)
	}
	if f.actor != "" && !s.byActor && matchesActor(e, f.actor) {
		s.byActor = true
	}
	if f.origin != "" && e.Origin == f.origin {
		s.byOrigin = true
	}
}

// merge adds o's stats to s's.
func (s *foldStats) merge(o *foldStats) {
	if o.events == 0 {
		return
	}
	if s.events == 0 || o.first.Seq < s.first.Seq {
		s.first = o.first
	}
	if o.last.Seq > s.last.Seq {
		s.last = o.last
	}
	s.events += o.events
	for _, a := range o.actors {
		i := 0
		for ; i < len(s.actors); i++ {
			if b := &s.actors[i]; b.origin == a.origin && b.name == a.name {
				if a.seq < b.seq {
					b.seq = a.seq
				}
				break
			}
		}
		if i == len(s.actors) {
			s.actors = append(s.actors, a)
		}
	}
	s.byActor = s.byActor || o.byActor
	s.byOrigin = s.byOrigin || o.byOrigin
}

// add folds one event.
func (f *folder) add(e *journal.Event) {
	switch e.Type {
	case journal.Create:
		st := f.get(e.Path, false)
		if !st.now {
			st.ident = ""
		}
		st.now, st.touched, st.isDir, st.size = true, true, e.IsDir, e.Size
		f.credit(st, e)
	case journal.Write, journal.Chmod:
		st := f.get(e.Path, true)
		st.now, st.touched, st.isDir, st.size = true, true, e.IsDir, e.Size
		f.credit(st, e)
	case journal.Remove:
		st := f.get(e.Path, true)
		f.credit(st, e)
		f.gone(st)
		if e.IsDir || st.isDir {
			for _, c := range f.under(e.Path) {
				f.credit(c, e)
				f.gone(c)
			}
		}
	case journal.Rename:
		if e.OldPath == "" || e.OldPath == e.Path {
			// The source is unknown (an outside rename inotify could not
			// pair): new content of unknown origin, as a create.
			st := f.get(e.Path, false)
			if st.now {
				f.replaced(st)
			}
			st.ident, st.now, st.touched, st.isDir, st.size = "", true, true, e.IsDir, e.Size
			f.credit(st, e)
			return
		}
		src := f.get(e.OldPath, true)
		dir := e.IsDir || src.isDir
		var kids []*foldState
		if dir {
			kids = f.under(e.OldPath)
		}
		dst := f.target(e.Path)
		f.move(src, dst, e)
		dst.isDir, dst.size = dir, e.Size
		for _, c := range kids {
			f.move(c, f.target(e.Path+c.path[len(e.OldPath):]), e)
		}
	}
}

// move carries src's content (and its stats) to dst, which e made.
func (f *folder) move(src, dst *foldState, e *journal.Event) {
	if dst.now {
		f.replaced(dst)
	}
	dst.ident, dst.touched, dst.isDir, dst.size = src.ident, src.touched, src.isDir, src.size
	dst.now = true
	dst.stats.merge(&src.stats)
	f.credit(dst, e)
	src.now, src.ident, src.touched = false, "", false
	src.stats = foldStats{actors: src.stats.actors[:0]} // merge copied them; the array serves again
}

// replaced: st's content is about to be overwritten or removed. When it
// was another start-point path's content, that path's content is gone for
// good: its state takes st's stats, so its "deleted" row says who.
func (f *folder) replaced(st *foldState) {
	if st.ident != "" && st.ident != st.path {
		if o := f.states[st.ident]; o != nil {
			o.stats.merge(&st.stats)
		}
	}
}

// gone: st's path no longer exists.
func (f *folder) gone(st *foldState) {
	f.replaced(st)
	st.now, st.ident, st.touched = false, "", false
}

// under is every existing state strictly below dir, in path order (so a
// move below does not meet a path it just made).
func (f *folder) under(dir string) []*foldState {
	prefix := dir + "/"
	if dir == "/" {
		prefix = "/"
	}
	var out []*foldState
	for p, st := range f.states {
		if st.now && p != dir && strings.HasPrefix(p, prefix) {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].path < out[j].path })
	return out
}

// rows turns the fold into its net rows, unsorted and unchecked against
// the tree: one per path whose state differs from the start point's.
func (f *folder) rows() []Row {
	moved := make(map[string]bool)
	for _, st := range f.states {
		if st.now && st.ident != "" && st.ident != st.path {
			moved[st.ident] = true
		}
	}
	var out []Row
	for _, st := range f.states {
		if f.actor != "" && !st.stats.byActor || f.origin != "" && !st.stats.byOrigin {
			continue
		}
		if st.stats.events == 0 {
			continue
		}
		r := Row{Path: st.path, IsDir: st.isDir, Size: st.size}
		switch {
		case !st.base && !st.now:
			continue
		case !st.now: // existed, gone
			if moved[st.path] {
				continue // its content lives on under another name: that row says so
			}
			r.Change, r.Size = Deleted, 0
		case st.ident == "": // new content
			r.Change, r.maybeExisted = Added, st.maybe
			if st.base {
				r.Change = Modified
			}
		case st.ident != st.path:
			r.Change, r.RenamedFrom = Renamed, st.ident
		case st.touched:
			r.Change = Modified
		default:
			continue // moved away and back, unchanged
		}
		st.stats.fill(&r)
		out = append(out, r)
	}
	return out
}

// fill copies the stats into a row, actors in order of appearance.
func (s *foldStats) fill(r *Row) {
	r.First, r.Last, r.Events = s.first, s.last, s.events
	sort.SliceStable(s.actors, func(i, j int) bool { return s.actors[i].seq < s.actors[j].seq })
	r.Actors = make([]string, len(s.actors))
	for i, a := range s.actors {
		r.Actors[i] = a.label()
	}
}
