package history

import (
	"context"
	"io/fs"
	"testing"
	"time"
)

// UpdateManifest over the manifest the store holds writes what differs
// (an entry changed, one gone, one new) and leaves the rest: loaded back,
// the manifest is the new one, whole, at its seq. Without the stored
// manifest it writes every row again, and nothing of the old stays.
func TestUpdateManifest(t *testing.T) {
	at := time.Unix(1700000000, 123)
	entry := func(ino uint64, size int64) Entry {
		return Entry{Inode: ino, Size: size, Mtime: at, Mode: 0o644}
	}
	first := map[string]Entry{"/a": entry(1, 10), "/b": entry(2, 20), "/c": entry(3, 30),
		"/d": {Inode: 4, Mtime: at, Mode: fs.ModeDir | 0o755, IsDir: true}}
	cases := []struct {
		name   string
		stored bool
	}{{"over the stored manifest", true}, {"stored not known", false}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, _ := openJournal(t, t.TempDir(), Retention{})
			if err := l.SaveManifest(Manifest{Seq: 5, Entries: first}); err != nil {
				t.Fatal(err)
			}
			old, ok, err := l.LoadManifest(context.Background())
			if err != nil || !ok || len(old.Entries) != 4 {
				t.Fatalf("loaded %d entries, %v, %v", len(old.Entries), ok, err)
			}
			next := map[string]Entry{"/a": entry(1, 10), "/b": entry(2, 21), "/d": first["/d"], "/e": entry(5, 50)}
			var stored map[string]Entry
			if c.stored {
				stored = old.Entries
			}
			if err := l.UpdateManifest(Manifest{Seq: 9, Entries: next}, stored); err != nil {
				t.Fatal(err)
			}
			got, ok, err := l.LoadManifest(context.Background())
			if err != nil || !ok || got.Seq != 9 || len(got.Entries) != len(next) {
				t.Fatalf("loaded seq %d, %d entries (%v, %v); want seq 9, %d", got.Seq, len(got.Entries), ok, err, len(next))
			}
			for p, want := range next {
				if !sameEntry(got.Entries[p], want) {
					t.Fatalf("%s: loaded %+v, want %+v", p, got.Entries[p], want)
				}
			}
		})
	}
}
