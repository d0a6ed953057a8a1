package history

import (
	"testing"

	"sandfs/core/journal"
)

func benchAppend(b *testing.B, j *journal.Journal) {
	e := sample(1)
	e.Path = "/src/pkg001/file_000123.go"
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		j.Append(e)
	}
}

func BenchmarkAppendMemory(b *testing.B) { benchAppend(b, journal.New()) }

func BenchmarkAppendDurable(b *testing.B) {
	l, err := Open(b.TempDir(), Retention{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	j, _ := journal.NewWith(l)
	benchAppend(b, j)
}

func BenchmarkStoreBatch(b *testing.B) {
	d, err := openDB(b.TempDir() + "/j.db")
	if err != nil {
		b.Fatal(err)
	}
	defer d.close()
	batch := make([]journal.Event, 1024)
	seq := uint64(0)
	b.ResetTimer()
	for i := 0; i < b.N; i += len(batch) {
		for k := range batch {
			seq++
			batch[k] = sample(k)
			batch[k].Seq = seq
		}
		if err := d.appendBatch(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScan100k reads 100,000 stored events back through the journal
// (the store's part of "changes since").
func BenchmarkScan100k(b *testing.B) {
	l, err := Open(b.TempDir(), Retention{}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	j, _ := journal.NewWith(l)
	for i := range 100_000 {
		j.Append(sample(i))
	}
	l.Close()
	l, _ = Open(l.dir, Retention{}, nil)
	defer l.Close()
	j, _ = journal.NewWith(l)
	b.ResetTimer()
	for range b.N {
		n := 0
		j.Scan(b.Context(), 0, func(journal.Event) bool { n++; return true })
		if n != 100_000 {
			b.Fatalf("scanned %d", n)
		}
	}
}
