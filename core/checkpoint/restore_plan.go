package checkpoint

import (
	"sort"
	"strings"

	"sandfs/core"
	"sandfs/core/apipath"
)

// step is one path of a restore: what the checkpoint has (t), what the
// tree had when the plan looked (c, the identity the write checks again).
type step struct {
	ap       string
	t, c     cpEntry
	inT, inC bool
	attrs    bool // content is the same: only mode, owner, times differ
	listed   bool // told in Written (a directory's mtime alone is not)
}

// restorePlan is every step of a restore, in the order they are made.
type restorePlan struct {
	remove  []step // deepest first
	mkdir   []step // shallowest first
	write   []step // files and symlinks
	dirs    []step // directory attributes, deepest first
	skipped []RestoreSkip
	changed []string // every path the plan changes, those beneath a removed directory too
}

// plan compares the checkpoint's tree (target) with the tree as it is
// (cur) beneath scopes, and, by actor, only on the actor's paths.
func plan(s *core.Sandbox, scopes []string, target, cur map[string]cpEntry, actor *actorChanges, res *RestoreResult) *restorePlan {
	// Only what differs is sorted and planned: a restore of a few files
	// in a big tree costs two passes over its maps, not a sort of them.
	var list []string
	for ap, t := range target {
		if c, ok := cur[ap]; (!ok || !same(t, c)) && inScope(ap, scopes) {
			list = append(list, ap)
		}
	}
	for ap := range cur {
		if _, ok := target[ap]; !ok && inScope(ap, scopes) {
			list = append(list, ap)
		}
	}
	sort.Strings(list)
	p := &restorePlan{}
	removedDirs := map[string]bool{}
	for _, ap := range list {
		t, inT := target[ap]
		c, inC := cur[ap]
		if actor != nil {
			owned, skip := actor.owns(ap)
			if !owned {
				continue
			}
			if skip != nil {
				p.skipped = append(p.skipped, *skip)
				continue
			}
		}
		p.changed = append(p.changed, ap)
		under := false
		ancestors(ap, func(d string) bool { under = removedDirs[d]; return !under })
		st := step{ap: ap, t: t, c: c, inT: inT, inC: inC}
		switch {
		case !inT:
			if ap == "/" || under {
				continue
			}
			p.remove = append(p.remove, st)
			if c.Kind == kindDir {
				removedDirs[ap] = true
			}
			continue
		case inC && t.Kind != c.Kind:
			if !under {
				p.remove = append(p.remove, st)
			}
			if c.Kind == kindDir {
				removedDirs[ap] = true
			}
			st.inC = false // the write finds nothing there
		}
		switch t.Kind {
		case kindDir:
			if !st.inC {
				p.mkdir = append(p.mkdir, st)
			}
			st.listed = !st.inC || t.Perm != c.Perm || t.Uid != c.Uid || t.Gid != c.Gid
			p.dirs = append(p.dirs, st)
		case kindFile:
			st.attrs = st.inC && t.Hash == c.Hash
			st.listed = true
			p.write = append(p.write, st)
		case kindLink:
			st.attrs = st.inC && t.Target == c.Target
			st.listed = true
			p.write = append(p.write, st)
		}
	}
	p.spareSkipped()
	p.addParents(target, cur, removedDirs)
	sort.SliceStable(p.mkdir, func(i, j int) bool { return depth(p.mkdir[i].ap) < depth(p.mkdir[j].ap) })
	sort.SliceStable(p.remove, func(i, j int) bool { return depth(p.remove[i].ap) > depth(p.remove[j].ap) })
	sort.SliceStable(p.dirs, func(i, j int) bool { return depth(p.dirs[i].ap) > depth(p.dirs[j].ap) })
	return p
}

// addParents plans the directories above what is written that the tree
// lacks (a restore of /a/b/c.txt where /a is gone makes /a and /a/b as the
// checkpoint has them), though they are outside the paths asked.
func (p *restorePlan) addParents(target, cur map[string]cpEntry, removedDirs map[string]bool) {
	planned := map[string]bool{}
	for _, st := range p.mkdir {
		planned[st.ap] = true
	}
	var add []step
	for _, list := range [][]step{p.mkdir, p.write} {
		for _, st := range list {
			ancestors(st.ap, func(d string) bool {
				if c, ok := cur[d]; ok && c.Kind == kindDir && !removedDirs[d] {
					return false // there, and so is everything above
				}
				t, ok := target[d]
				if !ok || t.Kind != kindDir || planned[d] {
					return !planned[d]
				}
				planned[d] = true
				c, inC := cur[d]
				ps := step{ap: d, t: t, inT: true, listed: true}
				if inC && !removedDirs[d] {
					p.remove = append(p.remove, step{ap: d, t: t, c: c, inT: true, inC: true})
				}
				add = append(add, ps)
				return true
			})
		}
	}
	p.mkdir = append(p.mkdir, add...)
	p.dirs = append(p.dirs, add...)
}

// spareSkipped keeps every directory that holds a skipped path: removing
// it would remove another's work.
func (p *restorePlan) spareSkipped() {
	if len(p.skipped) == 0 {
		return
	}
	keep := p.remove[:0]
	for _, st := range p.remove {
		var held *RestoreSkip
		for i := range p.skipped {
			if apipath.Within(p.skipped[i].Path, st.ap) && p.skipped[i].Path != st.ap {
				held = &p.skipped[i]
				break
			}
		}
		if held == nil {
			keep = append(keep, st)
			continue
		}
		p.skipped = append(p.skipped, RestoreSkip{Path: st.ap, By: held.By, Reason: "holds " + held.Path + ", " + held.Reason})
	}
	p.remove = keep
}

// same reports whether the tree's entry is the checkpoint's: content,
// target, mode, owner and mtime.
func same(t, c cpEntry) bool {
	if t.Kind != c.Kind || t.Uid != c.Uid || t.Gid != c.Gid {
		return false
	}
	switch t.Kind {
	case kindFile:
		return t.Hash == c.Hash && t.Perm == c.Perm && t.Mtime == c.Mtime
	case kindLink:
		return t.Target == c.Target
	}
	return t.Perm == c.Perm && t.Mtime == c.Mtime
}

func depth(ap string) int {
	if ap == "/" {
		return 0
	}
	return strings.Count(ap, "/")
}

// report fills a dry run's result: what would be written and removed.
func (p *restorePlan) report(res *RestoreResult) {
	for _, st := range p.remove {
		if !st.inT {
			res.Removed = append(res.Removed, st.ap)
		}
	}
	for _, list := range [][]step{p.dirs, p.write} {
		for _, st := range list {
			if st.listed {
				res.Written = append(res.Written, st.ap)
			}
		}
	}
	res.Skipped = append(res.Skipped, p.skipped...)
	sort.Strings(res.Written)
	sort.Strings(res.Removed)
	sort.Slice(res.Skipped, func(i, j int) bool { return res.Skipped[i].Path < res.Skipped[j].Path })
}
