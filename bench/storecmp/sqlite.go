package main

import (
	"database/sql"
	"fmt"
	"path/filepath"

	_ "modernc.org/sqlite"
)

// sqliteStore keeps one row per event: seq is the rowid, time and path are
// indexed; the rest is either plain columns or one compact blob.
type sqliteStore struct {
	db   *sql.DB
	ins  *sql.Stmt
	blob bool
	buf  []byte
}

const colsSchema = `CREATE TABLE ev(seq INTEGER PRIMARY KEY, time INTEGER NOT NULL, origin TEXT, type TEXT,
 path TEXT NOT NULL, old_path TEXT, actor TEXT, pid INTEGER, uid INTEGER, size INTEGER, mtime INTEGER,
 inode INTEGER, comm TEXT)`

const blobSchema = `CREATE TABLE ev(seq INTEGER PRIMARY KEY, time INTEGER NOT NULL, path TEXT NOT NULL, data BLOB NOT NULL)`

// openSQLite opens the journal in WAL mode with the given synchronous
// setting: FULL syncs the WAL at every commit (durable against power loss),
// NORMAL only at checkpoints, OFF never.
func openSQLite(dir, sync string, blob bool) (store, error) {
	dsn := "file:" + filepath.Join(dir, "journal.db") +
		"?_pragma=journal_mode(WAL)&_pragma=synchronous(" + sync + ")&_txlock=immediate"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	schema, ins := colsSchema, `INSERT INTO ev VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?)`
	if blob {
		schema, ins = blobSchema, `INSERT INTO ev VALUES(?,?,?,?)`
	}
	for _, q := range []string{schema, `CREATE INDEX ev_time ON ev(time)`, `CREATE INDEX ev_path ON ev(path)`} {
		if _, err := db.Exec(q); err != nil {
			db.Close()
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	st, err := db.Prepare(ins)
	if err != nil {
		db.Close()
		return nil, err
	}
	return &sqliteStore{db: db, ins: st, blob: blob}, nil
}

func (s *sqliteStore) Append(batch []rec) error {
	tx, err := s.db.Begin()
	if err != nil {
		return err
	}
	st := tx.Stmt(s.ins)
	for i := range batch {
		r := &batch[i]
		if s.blob {
			s.buf = encode(s.buf[:0], r)
			_, err = st.Exec(int64(r.Seq), r.Time, r.Path, s.buf)
		} else {
			_, err = st.Exec(int64(r.Seq), r.Time, r.Origin, r.Type, r.Path, r.OldPath, r.Actor,
				r.Pid, r.Uid, r.Size, r.Mtime, int64(r.Inode), r.Comm)
		}
		if err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}

func (s *sqliteStore) Scan(from uint64, fn func(*rec) error) error {
	q := `SELECT * FROM ev WHERE seq >= ? ORDER BY seq`
	rows, err := s.db.Query(q, int64(from))
	if err != nil {
		return err
	}
	defer rows.Close()
	var r rec
	var seq, inode int64
	var data []byte
	for rows.Next() {
		if s.blob {
			var path string
			err = rows.Scan(&seq, &r.Time, &path, &data)
			if err == nil {
				err = decode(data, &r)
			}
		} else {
			err = rows.Scan(&seq, &r.Time, &r.Origin, &r.Type, &r.Path, &r.OldPath, &r.Actor,
				&r.Pid, &r.Uid, &r.Size, &r.Mtime, &inode, &r.Comm)
			r.Inode = uint64(inode)
		}
		if err != nil {
			return err
		}
		r.Seq = uint64(seq)
		if err := fn(&r); err != nil {
			return err
		}
	}
	return rows.Err()
}

func (s *sqliteStore) SeqAtTime(t int64) (uint64, error) {
	var seq sql.NullInt64
	err := s.db.QueryRow(`SELECT seq FROM ev WHERE time >= ? ORDER BY time, seq LIMIT 1`, t).Scan(&seq)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	return uint64(seq.Int64), err
}

func (s *sqliteStore) PruneBefore(seq uint64) error {
	_, err := s.db.Exec(`DELETE FROM ev WHERE seq < ?`, int64(seq))
	return err
}

func (s *sqliteStore) Compact() error {
	_, err := s.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

func (s *sqliteStore) Close() error {
	s.ins.Close()
	return s.db.Close()
}
