package checkpoint

import (
	"maps"
	"sort"
	"strings"

	"sandfs/core/apipath"
)

// merger decides a merge path by path, three ways: base (the checkpoint
// the fork was made from), ours (the sandbox merged into, now: cur) and
// theirs (base changed by set and del, what the fork changed). Its
// outcome is target, the tree merged into as it should be once merged,
// which a restore's plan and restorer then make (every write guarded by
// the stat identity cur holds).
type merger struct {
	base, cur map[string]cpEntry
	set       map[string]cpEntry
	del       map[string]bool
	strategy  string
	target    map[string]cpEntry
	conflicts []conflict
	curKeys   []string // cur's paths sorted, made on first need
}

type conflict struct {
	ap, why, took string
}

// theirs is the fork's entry at ap.
func (m *merger) theirs(ap string) (cpEntry, bool) {
	if e, ok := m.set[ap]; ok {
		return e, true
	}
	if m.del[ap] {
		return cpEntry{}, false
	}
	e, ok := m.base[ap]
	return e, ok
}

// alike reports whether two sides hold the same thing at a path: kind,
// owner, permission bits and content or target. Times are not compared:
// a directory's mtime moves with every change in it, and a file written
// back as it was is not a change to merge.
func alike(a cpEntry, inA bool, b cpEntry, inB bool) bool {
	if inA != inB || !inA {
		return inA == inB
	}
	if a.Kind != b.Kind || a.Uid != b.Uid || a.Gid != b.Gid {
		return false
	}
	switch a.Kind {
	case kindFile:
		return a.Hash == b.Hash && a.Perm == b.Perm
	case kindLink:
		return a.Target == b.Target
	}
	return a.Perm == b.Perm
}

// decide fills target: cur, with each path the fork alone changed taken
// from theirs, and each conflict as the strategy says.
func (m *merger) decide(scopes []string) {
	var paths []string
	for ap := range m.set {
		paths = append(paths, ap)
	}
	for ap := range m.del {
		paths = append(paths, ap)
	}
	sort.Strings(paths) // a directory before what it holds
	m.target = maps.Clone(m.cur)
	for _, ap := range paths {
		if !inScope(ap, scopes) {
			continue
		}
		b, inB := m.base[ap]
		t, inT := m.theirs(ap)
		c, inC := m.cur[ap]
		switch {
		case alike(b, inB, t, inT), alike(c, inC, t, inT):
			// The fork left it as it was, or both made the same change.
		case alike(b, inB, c, inC):
			if why := m.blocked(ap, t, inT, c, inC); why != "" {
				m.conflict(ap, why, t, inT)
			} else {
				m.take(ap, t, inT, c, inC)
			}
		default:
			m.conflict(ap, "changed on both sides", t, inT)
		}
	}
}

// blocked says why the fork's change at ap, one the sandbox did not
// change, still cannot be taken alone: its directory is gone or is no
// longer one here, or it removes (or replaces) a directory in which the
// sandbox changed something.
func (m *merger) blocked(ap string, t cpEntry, inT bool, c cpEntry, inC bool) string {
	if inT && ap != "/" {
		dir, _ := apipath.Split(ap)
		if d, ok := m.target[dir]; !ok || d.Kind != kindDir {
			return "its directory " + dir + " was removed or replaced in the sandbox merged into"
		}
	}
	if inC && c.Kind == kindDir && (!inT || t.Kind != kindDir) {
		for _, q := range m.under(ap) {
			bq, inB := m.base[q]
			if !alike(bq, inB, m.cur[q], true) {
				return "the sandbox merged into changed " + q + " beneath it"
			}
		}
	}
	return ""
}

// take gives ap the fork's entry in target (a directory that stays one
// keeps our mtime: a restore's plan would move it back otherwise).
func (m *merger) take(ap string, t cpEntry, inT bool, c cpEntry, inC bool) {
	if inC && c.Kind == kindDir && (!inT || t.Kind != kindDir) {
		for _, q := range m.under(ap) {
			delete(m.target, q)
		}
	}
	switch {
	case !inT:
		delete(m.target, ap)
	case inC && c.Kind == kindDir && t.Kind == kindDir:
		c.Perm, c.Uid, c.Gid = t.Perm, t.Uid, t.Gid
		m.target[ap] = c
	default:
		m.target[ap] = t
	}
}

// conflict records ap; StrategyTheirs gives it the fork's entry (and the
// fork's directories above it that target lacks), StrategyOurs and
// StrategyFail leave it.
func (m *merger) conflict(ap, why string, t cpEntry, inT bool) {
	cf := conflict{ap: ap, why: why}
	switch m.strategy {
	case StrategyOurs:
		cf.took = StrategyOurs
	case StrategyTheirs:
		cf.took = StrategyTheirs
		if inT {
			var missing []string
			ancestors(ap, func(d string) bool {
				if e, ok := m.target[d]; ok && e.Kind == kindDir {
					return false
				}
				missing = append(missing, d)
				return true
			})
			for i := len(missing) - 1; i >= 0; i-- {
				d := missing[i]
				td, _ := m.theirs(d)
				cd, inCd := m.target[d]
				m.take(d, td, true, cd, inCd)
			}
		}
		c, inC := m.target[ap]
		m.take(ap, t, inT, c, inC)
	}
	m.conflicts = append(m.conflicts, cf)
}

// under is every path of cur beneath the directory ap.
func (m *merger) under(ap string) []string {
	if m.curKeys == nil {
		m.curKeys = make([]string, 0, len(m.cur))
		for p := range m.cur {
			m.curKeys = append(m.curKeys, p)
		}
		sort.Strings(m.curKeys)
	}
	prefix := ap + "/"
	if ap == "/" {
		prefix = "/"
	}
	i := sort.SearchStrings(m.curKeys, prefix)
	j := i
	for j < len(m.curKeys) && strings.HasPrefix(m.curKeys[j], prefix) {
		j++
	}
	return m.curKeys[i:j]
}
