package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver: the binary stays static

	"sandfs/core/journal"
)

// The store is one SQLite database, journal.db, in WAL mode: a person can
// open it with sqlite3 and query the events as rows (docs/history.md).
//
//	events(seq PRIMARY KEY, time ns, type, path, old_path, is_dir, size,
//	       mtime ns, inode, mode, origin, actor, pid, uid, comm, cgroup,
//	       found_at_start)
//	manifest(path PRIMARY KEY, inode, size, mtime, mode, is_dir)
//	watchers(id PRIMARY KEY, config JSON, created ns, start_seq, refs)
//	meta(key PRIMARY KEY, value)
const schema = `
CREATE TABLE IF NOT EXISTS events(
	seq INTEGER PRIMARY KEY,
	time INTEGER NOT NULL,
	type TEXT NOT NULL,
	path TEXT NOT NULL,
	old_path TEXT NOT NULL DEFAULT '',
	is_dir INTEGER NOT NULL DEFAULT 0,
	size INTEGER NOT NULL DEFAULT 0,
	mtime INTEGER NOT NULL DEFAULT 0,
	inode INTEGER NOT NULL DEFAULT 0,
	mode INTEGER NOT NULL DEFAULT 0,
	origin TEXT NOT NULL,
	actor TEXT NOT NULL DEFAULT '',
	pid INTEGER NOT NULL DEFAULT 0,
	uid INTEGER NOT NULL DEFAULT 0,
	comm TEXT NOT NULL DEFAULT '',
	cgroup TEXT NOT NULL DEFAULT '',
	found_at_start INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS events_time ON events(time);
CREATE TABLE IF NOT EXISTS manifest(
	path TEXT PRIMARY KEY,
	inode INTEGER NOT NULL,
	size INTEGER NOT NULL,
	mtime INTEGER NOT NULL,
	mode INTEGER NOT NULL,
	is_dir INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS watchers(
	id TEXT PRIMARY KEY,
	config TEXT NOT NULL,
	created INTEGER NOT NULL,
	start_seq INTEGER NOT NULL,
	refs INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);
`

const eventColumns = `seq, time, type, path, old_path, is_dir, size, mtime, inode, mode, origin, actor, pid, uid, comm, cgroup, found_at_start`

type db struct {
	sql    *sql.DB
	insert *sql.Stmt
}

// openDB opens (making it) the database at path, which the caller has
// checked is beneath its state directory and no symlink.
func openDB(path string) (*db, error) {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(NORMAL)", "busy_timeout(10000)", "auto_vacuum(INCREMENTAL)", "foreign_keys(OFF)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	d, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	d.SetMaxOpenConns(4)
	d.SetConnMaxIdleTime(time.Minute)
	if _, err := d.Exec(schema); err != nil {
		d.Close()
		return nil, fmt.Errorf("history: %s: %w", path, err)
	}
	ins, err := d.Prepare(`INSERT OR IGNORE INTO events(` + eventColumns + `) VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`)
	if err != nil {
		d.Close()
		return nil, err
	}
	return &db{sql: d, insert: ins}, nil
}

func (d *db) close() error {
	d.insert.Close()
	return d.sql.Close()
}

// appendBatch stores events in one transaction.
func (d *db) appendBatch(events []journal.Event) error {
	tx, err := d.sql.Begin()
	if err != nil {
		return err
	}
	st := tx.Stmt(d.insert)
	for _, e := range events {
		if _, err := st.Exec(int64(e.Seq), nanos(e.Time), string(e.Type), e.Path, e.OldPath, e.IsDir, e.Size,
			nanos(e.Mtime), int64(e.Inode), int64(e.Mode), string(e.Origin), e.Actor, int64(e.Pid), int64(e.Uid),
			e.Comm, e.Cgroup, e.FoundAtStart); err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

// bounds is the oldest and newest seq stored (0, 0 when none).
func (d *db) bounds() (oldest, newest uint64, err error) {
	var lo, hi sql.NullInt64
	if err := d.sql.QueryRow(`SELECT MIN(seq), MAX(seq) FROM events`).Scan(&lo, &hi); err != nil {
		return 0, 0, err
	}
	return uint64(lo.Int64), uint64(hi.Int64), nil
}

// scan calls fn with the stored events in (after, until], in order.
func (d *db) scan(ctx context.Context, after, until uint64, fn func(journal.Event) bool) error {
	rows, err := d.sql.QueryContext(ctx, `SELECT `+eventColumns+` FROM events WHERE seq > ? AND seq <= ? ORDER BY seq`, int64(after), int64(until))
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var e journal.Event
		var seq, tm, mt, ino, mode, pid, uid int64
		var typ, origin string
		if err := rows.Scan(&seq, &tm, &typ, &e.Path, &e.OldPath, &e.IsDir, &e.Size, &mt, &ino, &mode, &origin,
			&e.Actor, &pid, &uid, &e.Comm, &e.Cgroup, &e.FoundAtStart); err != nil {
			return err
		}
		e.Seq, e.Time, e.Type, e.Mtime, e.Inode = uint64(seq), fromNanos(tm), journal.Type(typ), fromNanos(mt), uint64(ino)
		e.Mode, e.Origin, e.Pid, e.Uid = fs.FileMode(mode), journal.Origin(origin), uint32(pid), uint32(uid)
		if !fn(e) {
			return nil
		}
	}
	return rows.Err()
}

// seqAt is the first stored seq at or after t (0 when none).
func (d *db) seqAt(t time.Time) (uint64, error) {
	var s sql.NullInt64
	err := d.sql.QueryRow(`SELECT MIN(seq) FROM events WHERE time >= ?`, t.UnixNano()).Scan(&s)
	return uint64(s.Int64), err
}

// pruneThrough deletes the events up to seq, then gives the freed pages
// back to the filesystem.
func (d *db) pruneThrough(seq uint64) (int64, error) {
	res, err := d.sql.Exec(`DELETE FROM events WHERE seq <= ?`, int64(seq))
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		_, err = d.sql.Exec(`PRAGMA incremental_vacuum`)
	}
	return n, err
}

// seqBefore is the newest seq with time before t (0 when none).
func (d *db) seqBefore(t time.Time) (uint64, error) {
	var s sql.NullInt64
	err := d.sql.QueryRow(`SELECT MAX(seq) FROM events WHERE time < ?`, t.UnixNano()).Scan(&s)
	return uint64(s.Int64), err
}

// size is the bytes the database's pages hold, free pages left out.
func (d *db) size() (int64, error) {
	var pages, free, pageSize int64
	if err := d.sql.QueryRow(`PRAGMA page_count`).Scan(&pages); err != nil {
		return 0, err
	}
	if err := d.sql.QueryRow(`PRAGMA freelist_count`).Scan(&free); err != nil {
		return 0, err
	}
	if err := d.sql.QueryRow(`PRAGMA page_size`).Scan(&pageSize); err != nil {
		return 0, err
	}
	return (pages - free) * pageSize, nil
}

// seqAtFraction is the seq below which about frac of the stored events lie.
func (d *db) seqAtFraction(frac float64) (uint64, error) {
	lo, hi, err := d.bounds()
	if err != nil || hi == 0 {
		return 0, err
	}
	return lo + uint64(float64(hi-lo)*frac), nil
}

func (d *db) meta(key string) (string, error) {
	var v sql.NullString
	err := d.sql.QueryRow(`SELECT value FROM meta WHERE key = ?`, key).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return v.String, err
}

func (d *db) setMeta(key, value string) error {
	_, err := d.sql.Exec(`INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
	return err
}
