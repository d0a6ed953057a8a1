package changes

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"sandfs/core"
	"sandfs/core/journal"
)

// benchEvents is n events over 2,000 files in 20 directories: mostly
// writes, by three actors, with creates, chmods, renames and removes.
func benchEvents(n int) []journal.Event {
	actors := []string{"api:agent-1", "fuse:vim", "external"}
	out := make([]journal.Event, 0, n)
	for i := 0; len(out) < n; i++ {
		p := fmt.Sprintf("/d%02d/f%04d.go", i%20, i%2000)
		a := actors[i%3]
		switch i % 50 {
		case 0:
			out = append(out, ev(journal.Create, p+".new", a))
		case 1:
			out = append(out, mv(p+".new", p+".moved", a))
		case 2:
			out = append(out, ev(journal.Remove, p+".moved", a))
		case 3:
			out = append(out, ev(journal.Chmod, p, a))
		default:
			out = append(out, ev(journal.Write, p, a))
		}
	}
	for i := range out {
		out[i].Seq = uint64(i + 1)
	}
	return out
}

func benchTree(b *testing.B) (*core.Sandbox, string) {
	root := b.TempDir()
	s, err := core.Open("default", root, core.Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	for d := 0; d < 20; d++ {
		os.MkdirAll(filepath.Join(root, fmt.Sprintf("d%02d", d)), 0o755)
	}
	for i := 0; i < 2000; i++ {
		os.WriteFile(filepath.Join(root, fmt.Sprintf("d%02d/f%04d.go", i%20, i)), []byte("x\n"), 0o644)
	}
	return s, root
}

// BenchmarkChanges100k: Changes over a journal given 100,000 events (the
// in-memory ring keeps the last 10,000 of them; a durable journal's Scan
// hands all), rows checked against a 2,000-file tree.
func BenchmarkChanges100k(b *testing.B) {
	s, _ := benchTree(b)
	for _, e := range benchEvents(100_000) {
		s.Journal().Append(e)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		cs, err := Since(ctx, s, Query{})
		if err != nil || len(cs.Rows) == 0 {
			b.Fatal(err, len(cs.Rows))
		}
	}
}

// BenchmarkChangesFold100k: the fold of all 100,000 events and the check
// of its rows against the tree, without the journal's ring in the way.
func BenchmarkChangesFold100k(b *testing.B) {
	s, _ := benchTree(b)
	events := benchEvents(100_000)
	q := Query{}
	q.check()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		f := newFolder(&q)
		for j := range events {
			f.add(&events[j])
		}
		rows, _ := checkRows(ctx, s, f.rows(), &q)
		if len(rows) != 1920 { // the files of 80 of every 2,000 indices get only the create-rename-remove run
			b.Fatal(len(rows))
		}
	}
}
