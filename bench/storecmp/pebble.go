package main

import (
	"github.com/cockroachdb/pebble"
)

// pebbleStore keeps keys 'e'+seq -> compact record and 't'+time+seq -> nil.
type pebbleStore struct {
	db   *pebble.DB
	sync *pebble.WriteOptions
	buf  []byte
}

func openPebble(dir string, durable bool) (store, error) {
	db, err := pebble.Open(dir, &pebble.Options{Logger: quietLogger{}})
	if err != nil {
		return nil, err
	}
	wo := pebble.NoSync
	if durable {
		wo = pebble.Sync
	}
	return &pebbleStore{db: db, sync: wo}, nil
}

func evKey(seq uint64) []byte         { return seqKey([]byte{'e'}, seq) }
func tKey(t int64, seq uint64) []byte { return timeKey([]byte{'t'}, t, seq) }

func (s *pebbleStore) Append(batch []rec) error {
	b := s.db.NewBatch()
	defer b.Close()
	for i := range batch {
		r := &batch[i]
		s.buf = encode(s.buf[:0], r)
		if err := b.Set(evKey(r.Seq), s.buf, nil); err != nil {
			return err
		}
		if err := b.Set(tKey(r.Time, r.Seq), nil, nil); err != nil {
			return err
		}
	}
	return b.Commit(s.sync)
}

func (s *pebbleStore) Scan(from uint64, fn func(*rec) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: evKey(from), UpperBound: []byte{'f'}})
	if err != nil {
		return err
	}
	var r rec
	for ok := it.First(); ok; ok = it.Next() {
		if err := decode(it.Value(), &r); err != nil {
			it.Close()
			return err
		}
		r.Seq = be64(it.Key()[1:])
		if err := fn(&r); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

func (s *pebbleStore) SeqAtTime(t int64) (uint64, error) {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: tKey(t, 0), UpperBound: []byte{'u'}})
	if err != nil {
		return 0, err
	}
	var seq uint64
	if it.First() {
		seq = be64(it.Key()[9:])
	}
	return seq, it.Close()
}

func (s *pebbleStore) PruneBefore(seq uint64) error {
	// The time index is cut at the time of the first record kept.
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: evKey(seq), UpperBound: []byte{'f'}})
	if err != nil {
		return err
	}
	tEnd := []byte{'u'}
	if it.First() {
		var r rec
		if err := decode(it.Value(), &r); err != nil {
			it.Close()
			return err
		}
		tEnd = tKey(r.Time, seq)
	}
	if err := it.Close(); err != nil {
		return err
	}
	b := s.db.NewBatch()
	defer b.Close()
	if err := b.DeleteRange(evKey(0), evKey(seq), nil); err != nil {
		return err
	}
	if err := b.DeleteRange([]byte{'t'}, tEnd, nil); err != nil {
		return err
	}
	return b.Commit(s.sync)
}

func (s *pebbleStore) Compact() error {
	if err := s.db.Flush(); err != nil {
		return err
	}
	return s.db.Compact([]byte{'e'}, []byte{'u'}, true)
}

func (s *pebbleStore) Close() error { return s.db.Close() }

type quietLogger struct{}

func (quietLogger) Infof(string, ...interface{}) {}
func (quietLogger) Fatalf(format string, args ...interface{}) {
	pebble.DefaultLogger.Fatalf(format, args...)
}
