package checkpoint

// applyCounted makes the plan's steps with r and counts what they changed
// in the quota's usage, from the plan's two trees, as the quota counts: a
// file weighs its size and one entry, a directory or symlink one entry. A
// path skipped, and what is beneath it, changed nothing. So a restore or
// a merge of a few files in a big tree costs those files, not a walk of
// the tree. A file with several names weighs its size once per inode in
// the quota's counts and once per name here, so a scan is asked for too,
// which corrects that later, off the request.
func applyCounted(r *restorer, p *restorePlan, target, cur map[string]cpEntry) {
	op := r.s.Quota().Begin()
	r.apply(p)
	skipped := make(map[string]bool, len(r.res.Skipped))
	for _, sk := range r.res.Skipped {
		skipped[sk.Path] = true
	}
	var bytes, entries int64
	for _, ap := range p.changed {
		if skipped[ap] {
			continue
		}
		under := false
		ancestors(ap, func(d string) bool { under = skipped[d]; return !under })
		if under {
			continue
		}
		t, inT := target[ap]
		c, inC := cur[ap]
		b1, e1 := weight(t, inT)
		b0, e0 := weight(c, inC)
		bytes += b1 - b0
		entries += e1 - e0
	}
	op.End(bytes, entries)
	if len(p.changed) > 0 {
		r.s.Quota().OutsideChange()
	}
}

// weight is what an entry adds to the quota's usage.
func weight(e cpEntry, in bool) (bytes, entries int64) {
	switch {
	case !in:
		return 0, 0
	case e.Kind == kindFile:
		return e.Size, 1
	}
	return 0, 1
}
