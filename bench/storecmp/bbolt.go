package main

import (
	"bytes"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// boltStore keeps bucket "ev" (seq -> compact record) and bucket "t"
// (time|seq -> nil) as the index SeqAtTime reads.
type boltStore struct {
	db *bolt.DB
}

var bEv, bTime = []byte("ev"), []byte("t")

func openBolt(dir string, durable bool) (store, error) {
	db, err := bolt.Open(filepath.Join(dir, "journal.bolt"), 0o600, &bolt.Options{NoSync: !durable})
	if err != nil {
		return nil, err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists(bEv); err != nil {
			return err
		}
		_, err := tx.CreateBucketIfNotExists(bTime)
		return err
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	return &boltStore{db: db}, nil
}

func (s *boltStore) Append(batch []rec) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		ev, ti := tx.Bucket(bEv), tx.Bucket(bTime)
		ev.FillPercent, ti.FillPercent = 1, 1 // keys only grow: pack the pages
		for i := range batch {
			r := &batch[i]
			// bbolt keeps the value slice until the commit: no reuse.
			if err := ev.Put(seqKey(nil, r.Seq), encode(nil, r)); err != nil {
				return err
			}
			if err := ti.Put(timeKey(nil, r.Time, r.Seq), nil); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *boltStore) Scan(from uint64, fn func(*rec) error) error {
	return s.db.View(func(tx *bolt.Tx) error {
		c := tx.Bucket(bEv).Cursor()
		var r rec
		for k, v := c.Seek(seqKey(nil, from)); k != nil; k, v = c.Next() {
			if err := decode(v, &r); err != nil {
				return err
			}
			r.Seq = be64(k)
			if err := fn(&r); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *boltStore) SeqAtTime(t int64) (seq uint64, err error) {
	err = s.db.View(func(tx *bolt.Tx) error {
		if k, _ := tx.Bucket(bTime).Cursor().Seek(timeKey(nil, t, 0)); k != nil {
			seq = be64(k[8:])
		}
		return nil
	})
	return seq, err
}

func (s *boltStore) PruneBefore(seq uint64) error {
	return s.db.Update(func(tx *bolt.Tx) error {
		ev, ti := tx.Bucket(bEv), tx.Bucket(bTime)
		// Keys first, deletes after: a bbolt cursor may skip after Delete.
		var evKeys, tKeys [][]byte
		var r rec
		lim := seqKey(nil, seq)
		c := ev.Cursor()
		for k, v := c.First(); k != nil && bytes.Compare(k, lim) < 0; k, v = c.Next() {
			if err := decode(v, &r); err != nil {
				return err
			}
			evKeys = append(evKeys, k)
			tKeys = append(tKeys, timeKey(nil, r.Time, be64(k)))
		}
		for i := range evKeys {
			if err := ev.Delete(evKeys[i]); err != nil {
				return err
			}
			if err := ti.Delete(tKeys[i]); err != nil {
				return err
			}
		}
		return nil
	})
}

func (s *boltStore) Compact() error { return nil }
func (s *boltStore) Close() error   { return s.db.Close() }

func be64(b []byte) uint64 {
	var v uint64
	for _, c := range b[:8] {
		v = v<<8 | uint64(c)
	}
	return v
}
