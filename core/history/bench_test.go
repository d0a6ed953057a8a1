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
