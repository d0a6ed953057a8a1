package history

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver: the binary stays static

	"sandfs/core/journal"
)

// The store is one SQLite database, journal.db, in WAL mode: a person can
// open it with sqlite3 and query the events as rows (docs/history.md).
//
//	events(seq PRIMARY KEY, time ns, type, path, old_path, origin, actor,
//	       pid, comm)
//	chunks(first_seq PRIMARY KEY, last_seq, first_time, last_time, body)
//
// events is for people: one row an event, the columns they ask about.
// chunks is what the daemon reads back: up to chunkEvents whole events
// (codec.go records, as the tail holds them) per row, so that reading
// 100,000 events steps a few hundred rows, not 100,000 (which through the
// pure-Go driver alone cost about as much as the whole of "changes
// since" may).
//
//	manifest(path PRIMARY KEY, inode, size, mtime, mode, is_dir)
//	watchers(id PRIMARY KEY, config JSON (with its references), created ns, start_seq, refs)
//	meta(key PRIMARY KEY, value)
const schema = `
CREATE TABLE IF NOT EXISTS events(
	seq INTEGER PRIMARY KEY,
	time INTEGER NOT NULL,
	type TEXT NOT NULL,
	path TEXT NOT NULL,
	old_path TEXT NOT NULL,
	origin TEXT NOT NULL,
	actor TEXT NOT NULL,
	pid INTEGER NOT NULL,
	comm TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS chunks(
	first_seq INTEGER PRIMARY KEY,
	last_seq INTEGER NOT NULL,
	first_time INTEGER NOT NULL,
	last_time INTEGER NOT NULL,
	body BLOB NOT NULL
);
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

const eventColumns = `seq, time, type, path, old_path, origin, actor, pid, comm`

// chunkEvents is the most events one chunk row holds.
const chunkEvents = 512

// insertRows is how many events one INSERT statement carries.
const insertRows = 32

type db struct {
	sql    *sql.DB
	insert *sql.Stmt // insertRows events
	one    *sql.Stmt // one event
	chunk  *sql.Stmt
	buf    []byte // the writer's: a chunk's body
}

// openDB opens (making it) the database at path, which the caller has
// checked is beneath its state directory and no symlink.
func openDB(path string) (*db, error) {
	q := url.Values{}
	for _, p := range []string{"journal_mode(WAL)", "synchronous(NORMAL)", "busy_timeout(10000)", "auto_vacuum(INCREMENTAL)", "mmap_size(1073741824)", "cache_size(-32768)", "foreign_keys(OFF)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	d, err := sql.Open("sqlite", "file:"+path+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	d.SetMaxOpenConns(4)
	d.SetMaxIdleConns(1) // a reader's connection (2 fds) closes once read
	d.SetConnMaxIdleTime(time.Minute)
	if _, err := d.Exec(schema); err != nil {
		d.Close()
		return nil, fmt.Errorf("history: %s: %w", path, err)
	}
	row := "(?,?,?,?,?,?,?,?,?)"
	ins, err := d.Prepare(`INSERT OR IGNORE INTO events(` + eventColumns + `) VALUES` + row + strings.Repeat(","+row, insertRows-1))
	if err != nil {
		d.Close()
		return nil, err
	}
	one, err := d.Prepare(`INSERT OR IGNORE INTO events(` + eventColumns + `) VALUES` + row)
	if err != nil {
		d.Close()
		return nil, err
	}
	chunk, err := d.Prepare(`INSERT OR IGNORE INTO chunks(first_seq, last_seq, first_time, last_time, body) VALUES(?,?,?,?,?)`)
	if err != nil {
		d.Close()
		return nil, err
	}
	return &db{sql: d, insert: ins, one: one, chunk: chunk}, nil
}

func (d *db) close() error {
	d.insert.Close()
	d.one.Close()
	d.chunk.Close()
	return d.sql.Close()
}

// appendBatch stores events in one transaction: their rows, insertRows
// to a statement, and their chunks.
func (d *db) appendBatch(events []journal.Event) error {
	tx, err := d.sql.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	many, one, chunk := tx.Stmt(d.insert), tx.Stmt(d.one), tx.Stmt(d.chunk)
	args := make([]any, 0, 9*insertRows)
	// A loss marker (no type) takes a seq of its own but is no event a
	// person reads: the chunks keep it, the rows do not.
	rows := events
	if hasMarker(events) {
		rows = make([]journal.Event, 0, len(events))
		for _, e := range events {
			if e.Type != "" {
				rows = append(rows, e)
			}
		}
	}
	for rest := rows; len(rest) > 0; {
		st, n := one, 1
		if len(rest) >= insertRows {
			st, n = many, insertRows
		}
		args = args[:0]
		for _, e := range rest[:n] {
			args = append(args, int64(e.Seq), nanos(e.Time), string(e.Type), e.Path, e.OldPath, string(e.Origin), e.Actor,
				int64(e.Pid), e.Comm)
		}
		if _, err := st.Exec(args...); err != nil {
			return err
		}
		rest = rest[n:]
	}
	for rest := events; len(rest) > 0; {
		n := min(len(rest), chunkEvents)
		d.buf = d.buf[:0]
		for _, e := range rest[:n] {
			d.buf = appendRecord(d.buf, e)
		}
		first, last := rest[0], rest[n-1]
		if _, err := chunk.Exec(int64(first.Seq), int64(last.Seq), nanos(first.Time), nanos(last.Time), d.buf); err != nil {
			return err
		}
		rest = rest[n:]
	}
	return tx.Commit()
}

func hasMarker(events []journal.Event) bool {
	for _, e := range events {
		if e.Type == "" {
			return true
		}
	}
	return false
}

// bounds is the oldest and newest seq stored (0, 0 when none).
func (d *db) bounds() (oldest, newest uint64, err error) {
	var lo, hi sql.NullInt64
	if err := d.sql.QueryRow(`SELECT (SELECT MIN(seq) FROM events), (SELECT MAX(last_seq) FROM chunks)`).Scan(&lo, &hi); err != nil {
		return 0, 0, err
	}
	return uint64(lo.Int64), uint64(hi.Int64), nil
}

// scan calls fn with the stored events in (after, until], in order.
func (d *db) scan(ctx context.Context, after, until uint64, fn func(journal.Event) bool) error {
	rows, err := d.sql.QueryContext(ctx, `SELECT body FROM chunks WHERE last_seq > ? AND first_seq <= ? ORDER BY first_seq`, int64(after), int64(until))
	if err != nil {
		return err
	}
	defer rows.Close()
	var body sql.RawBytes
	in := interner{}
	for rows.Next() {
		if err := rows.Scan(&body); err != nil {
			return err
		}
		for b := []byte(body); len(b) > 0; {
			e, rest, err := nextRecordWith(b, in)
			if err != nil {
				return fmt.Errorf("history: a stored chunk does not decode: %w", err)
			}
			b = rest
			if e.Seq <= after {
				continue
			}
			if e.Seq > until || !fn(e) {
				return nil
			}
		}
	}
	return rows.Err()
}

// seqAt is the first stored seq at or after t (0 when none).
func (d *db) seqAt(t time.Time) (uint64, error) {
	var first sql.NullInt64
	if err := d.sql.QueryRow(`SELECT MIN(first_seq) FROM chunks WHERE last_time >= ?`, t.UnixNano()).Scan(&first); err != nil || !first.Valid {
		return 0, err
	}
	var s sql.NullInt64
	err := d.sql.QueryRow(`SELECT seq FROM events WHERE seq >= ? AND time >= ? ORDER BY seq LIMIT 1`, first.Int64, t.UnixNano()).Scan(&s)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return uint64(s.Int64), err
}

// pruneThrough deletes the events up to seq, then gives the freed pages
// back to the filesystem.
func (d *db) pruneThrough(seq uint64) (int64, error) {
	tx, err := d.sql.Begin()
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	// events exactly; a chunk goes once all its events have (the scan
	// skips what a kept chunk holds before the oldest event).
	res, err := tx.Exec(`DELETE FROM events WHERE seq <= ?`, int64(seq))
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	if _, err := tx.Exec(`DELETE FROM chunks WHERE last_seq <= ?`, int64(seq)); err != nil {
		return 0, err
	}
	if err := tx.Commit(); err != nil {
		return 0, err
	}
	if n > 0 {
		_, err = d.sql.Exec(`PRAGMA incremental_vacuum`)
	}
	return n, err
}

// seqBefore is the newest seq with time before t (0 when none).
func (d *db) seqBefore(t time.Time) (uint64, error) {
	var s sql.NullInt64
	err := d.sql.QueryRow(`SELECT MAX(last_seq) FROM chunks WHERE last_time < ?`, t.UnixNano()).Scan(&s)
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
