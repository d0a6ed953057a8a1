package core

import (
	"context"

	"golang.org/x/sys/unix"

	"sandfs/core/journal"
	"sandfs/core/quota"
)

// The calls of a Dir (dir.go, dir_ops.go) that change names without
// making a file: link, rename, unlink and rmdir. Each counts what it adds
// or frees in the sandbox's usage (core/quota).

// Link makes name in d a hard link to the file fromName in from (a symlink
// links as itself) and returns its stat.
func (d *Dir) Link(ctx context.Context, from *Dir, fromName, name string) (unix.Stat_t, error) {
	var st unix.Stat_t
	ap := d.child(name)
	if err := oneName(name); err != nil {
		return st, PathErr(OpLink, ap, err)
	}
	if err := oneName(fromName); err != nil {
		return st, PathErr(OpLink, from.child(fromName), err)
	}
	odir, odone, err := from.at()
	if err != nil {
		return st, PathErr(OpLink, from.child(fromName), err)
	}
	defer odone(odir)
	ctx, ndir, ndone, err := d.changeAt(ctx)
	if err != nil {
		return st, PathErr(OpLink, ap, err)
	}
	defer ndone(ndir)
	claim := d.s.watch.Claim(ap)
	defer claim.Done()
	uop := d.s.quota.Begin()
	if err := reserveEntry(&uop, ndir, name, OpLink, ap); err != nil {
		return st, err
	}
	if err := unix.Linkat(odir, fromName, ndir, name, 0); err != nil {
		uop.End(0, 0)
		return st, PathErr(OpLink, ap, err)
	}
	uop.End(0, 1) // a link is an entry, its bytes counted once (core/quota)
	if err := unix.Fstatat(ndir, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		d.s.tellStat(ctx, journal.Create, ap, "", false, nil)
		return st, PathErr(OpLink, ap, err)
	}
	d.s.tellStat(ctx, journal.Create, ap, "", false, &st)
	return st, nil
}

// Rename is renameat2(2) of name in d to toName in to, with the kernel's
// flags (RENAME_NOREPLACE, RENAME_EXCHANGE). It is one rename event with
// old_path; an exchange is two, one each way.
func (d *Dir) Rename(ctx context.Context, name string, to *Dir, toName string, flags uint) error {
	fa, ta := d.child(name), to.child(toName)
	if err := oneName(name); err != nil {
		return PathErr(OpMove, fa, err)
	}
	if err := oneName(toName); err != nil {
		return PathErr(OpMove, ta, err)
	}
	fdir, fdone, fg, err := d.atG()
	if err != nil {
		return PathErr(OpMove, fa, err)
	}
	defer fdone(fdir)
	tdir, tdone, tg, err := to.atG()
	if err != nil {
		return PathErr(OpMove, ta, err)
	}
	defer tdone(tdir)
	tctx, fctx := ctx, ctx
	if !d.root || !to.root {
		g := min(fg, tg)
		tctx = guarded(ctx, dirGuard{g: g, dir: tdir, oldDir: fdir})
		fctx = guarded(ctx, dirGuard{g: g, dir: fdir, oldDir: tdir})
	}
	claim := d.s.watch.Claim(fa, ta)
	defer claim.Done()
	// What the rename replaces is freed (an exchange frees nothing).
	uop := d.s.quota.Begin()
	var freed, gone int64
	var old unix.Stat_t
	if flags&unix.RENAME_EXCHANGE == 0 && unix.Fstatat(tdir, toName, &old, unix.AT_SYMLINK_NOFOLLOW) == nil {
		c := d.s.freedBy(ctx, ta, &old)
		freed, gone = c.Bytes, c.Entries
	}
	if flags == 0 {
		err = unix.Renameat(fdir, name, tdir, toName)
	} else {
		err = unix.Renameat2(fdir, name, tdir, toName, flags)
	}
	if err != nil {
		uop.End(0, 0)
		return PathErr(OpMove, fa, err)
	}
	uop.End(-freed, -gone)
	var st unix.Stat_t
	if unix.Fstatat(tdir, toName, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
		d.s.tellStat(tctx, journal.Rename, ta, fa, false, &st)
	} else {
		d.s.tellStat(tctx, journal.Rename, ta, fa, false, nil)
	}
	if flags&unix.RENAME_EXCHANGE != 0 {
		if unix.Fstatat(fdir, name, &st, unix.AT_SYMLINK_NOFOLLOW) == nil {
			d.s.tellStat(fctx, journal.Rename, fa, ta, false, &st)
		} else {
			d.s.tellStat(fctx, journal.Rename, fa, ta, false, nil)
		}
	}
	return nil
}

// Unlink removes the non-directory name from d.
func (d *Dir) Unlink(ctx context.Context, name string) error {
	return d.remove(ctx, name, 0)
}

// Rmdir removes the empty directory name from d.
func (d *Dir) Rmdir(ctx context.Context, name string) error {
	return d.remove(ctx, name, unix.AT_REMOVEDIR)
}

func (d *Dir) remove(ctx context.Context, name string, flags int) error {
	ap := d.child(name)
	if err := oneName(name); err != nil {
		return PathErr(OpRemove, ap, unix.EBUSY)
	}
	ctx, dirfd, done, err := d.changeAt(ctx)
	if err != nil {
		return PathErr(OpRemove, ap, err)
	}
	defer done(dirfd)
	dir := flags == unix.AT_REMOVEDIR
	// A file's one echo is its Remove; a directory's own watch adds more.
	claim := d.s.watch.ClaimEcho(ap, journal.Remove)
	if dir {
		claim.NoEcho()
	}
	uop := d.s.quota.Begin()
	gone := quota.Count{Entries: 1}
	var old unix.Stat_t
	if unix.Fstatat(dirfd, name, &old, unix.AT_SYMLINK_NOFOLLOW) == nil {
		gone = d.s.freedBy(ctx, ap, &old)
	}
	if err := unix.Unlinkat(dirfd, name, flags); err != nil {
		uop.End(0, 0)
		claim.Done()
		return PathErr(OpRemove, ap, err)
	}
	uop.End(-gone.Bytes, -gone.Entries)
	d.s.tellStat(ctx, journal.Remove, ap, "", dir, nil)
	claim.DoneEcho()
	return nil
}
