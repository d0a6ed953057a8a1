package history

import (
	"context"
	"encoding/json"
	"io/fs"
	"strconv"
	"time"

	"sandfs/core/journal"
)

// Entry is one file of the manifest: what the journal last knew of a path.
// Zero Size, Mtime, Inode or Mode mean "not known" (an event without a
// stat), which the comparison at start does not hold against the tree.
type Entry struct {
	Inode uint64
	Size  int64
	Mtime time.Time
	Mode  fs.FileMode
	IsDir bool
}

// Manifest is the tree as the journal knew it at Seq.
type Manifest struct {
	Seq     uint64
	Entries map[string]Entry // by API path; the root is not in it
}

// SaveManifest replaces the stored manifest, in one transaction, and lets
// retention prune the events up to its seq.
func (l *Log) SaveManifest(m Manifest) error { return l.saveManifest(m, nil) }

// UpdateManifest is SaveManifest when the store holds stored (what
// LoadManifest answered, unchanged since; nil: not known): only the paths
// whose entries differ are written, not the whole tree again.
func (l *Log) UpdateManifest(m Manifest, stored map[string]Entry) error {
	return l.saveManifest(m, stored)
}

// saveManifest writes m over stored (nil: every row again).
func (l *Log) saveManifest(m Manifest, stored map[string]Entry) error {
	if err := l.Sync(); err != nil {
		return err
	}
	tx, err := l.db.sql.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if stored == nil {
		if _, err := tx.Exec(`DELETE FROM manifest`); err != nil {
			return err
		}
	} else {
		del, err := tx.Prepare(`DELETE FROM manifest WHERE path = ?`)
		if err != nil {
			return err
		}
		defer del.Close()
		for p := range stored {
			if _, ok := m.Entries[p]; !ok {
				if _, err := del.Exec(p); err != nil {
					return err
				}
			}
		}
	}
	st, err := tx.Prepare(`INSERT OR REPLACE INTO manifest(path, inode, size, mtime, mode, is_dir) VALUES(?,?,?,?,?,?)`)
	if err != nil {
		return err
	}
	defer st.Close()
	for p, e := range m.Entries {
		if old, ok := stored[p]; ok && sameEntry(old, e) {
			continue
		}
		if _, err := st.Exec(p, int64(e.Inode), e.Size, nanos(e.Mtime), int64(e.Mode), e.IsDir); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(`INSERT INTO meta(key, value) VALUES('manifest_seq', ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`, strconv.FormatUint(m.Seq, 10)); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	l.mu.Lock()
	l.prunable = m.Seq
	l.mu.Unlock()
	return nil
}

// sameEntry is whether a and b are stored alike.
func sameEntry(a, b Entry) bool {
	return a.Inode == b.Inode && a.Size == b.Size && nanos(a.Mtime) == nanos(b.Mtime) && a.Mode == b.Mode && a.IsDir == b.IsDir
}

// LoadManifest is the stored manifest; ok is false when none was ever
// saved (a first start).
func (l *Log) LoadManifest(ctx context.Context) (m Manifest, ok bool, err error) {
	v, err := l.db.meta("manifest_seq")
	if err != nil || v == "" {
		return Manifest{}, false, err
	}
	m.Seq, _ = strconv.ParseUint(v, 10, 64)
	m.Entries = map[string]Entry{}
	rows, err := l.db.sql.QueryContext(ctx, `SELECT path, inode, size, mtime, mode, is_dir FROM manifest`)
	if err != nil {
		return Manifest{}, false, err
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var ino, mt, mode int64
		var e Entry
		if err := rows.Scan(&p, &ino, &e.Size, &mt, &mode, &e.IsDir); err != nil {
			return Manifest{}, false, err
		}
		e.Inode, e.Mtime, e.Mode = uint64(ino), fromNanos(mt), fs.FileMode(mode)
		m.Entries[p] = e
	}
	return m, true, rows.Err()
}

// Meta and SetMeta keep small facts beside the journal (the root's
// identity, say).
func (l *Log) Meta(key string) (string, error) { return l.db.meta(key) }

// SetMeta sets one fact.
func (l *Log) SetMeta(key, value string) error { return l.db.setMeta(key, value) }

// watcherJSON is a watcher's config column: the config, and beside its
// fields the watcher's references (absent from rows of before them).
type watcherJSON struct {
	journal.Config
	Aliases map[string]int `json:",omitempty"`
	Next    int            `json:",omitempty"`
}

// SaveWatchers replaces the stored watcher registry (journal.Store).
func (l *Log) SaveWatchers(ws []journal.WatcherRecord) error {
	tx, err := l.db.sql.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM watchers`); err != nil {
		return err
	}
	for _, w := range ws {
		cfg, err := json.Marshal(watcherJSON{w.Config, w.Aliases, w.Next})
		if err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO watchers(id, config, created, start_seq, refs) VALUES(?,?,?,?,?)`,
			w.ID, string(cfg), nanos(w.Created), int64(w.StartSeq), w.Refs); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// Watchers is the stored watcher registry (journal.Store).
func (l *Log) Watchers() ([]journal.WatcherRecord, error) {
	rows, err := l.db.sql.Query(`SELECT id, config, created, start_seq, refs FROM watchers ORDER BY created`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []journal.WatcherRecord
	for rows.Next() {
		var w journal.WatcherRecord
		var cfg string
		var created, start int64
		if err := rows.Scan(&w.ID, &cfg, &created, &start, &w.Refs); err != nil {
			return nil, err
		}
		var wj watcherJSON
		if json.Unmarshal([]byte(cfg), &wj) != nil {
			continue
		}
		w.Config, w.Aliases, w.Next = wj.Config, wj.Aliases, wj.Next
		w.Created, w.StartSeq = fromNanos(created), uint64(start)
		out = append(out, w)
	}
	return out, rows.Err()
}
