package changes

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sandfs/core/linediff"
	"strings"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/core/checkpoint"
	"sandfs/core/coretest"
	"sandfs/core/journal"
	"sandfs/internal/testenv"
)

// applyPatch applies diff to old with patch(1) and returns what it made.
func applyPatch(t *testing.T, old []byte, diff string) []byte {
	t.Helper()
	if _, err := exec.LookPath("patch"); err != nil {
		testenv.Skip(t, nil, "patch(1) is not installed: apt-get install patch")
	}
	dir := t.TempDir()
	in, out, pf := filepath.Join(dir, "old"), filepath.Join(dir, "new"), filepath.Join(dir, "diff")
	if err := os.WriteFile(in, old, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pf, []byte(diff), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("patch", "-s", "-f", "-o", out, in, pf)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("patch: %v\n%s\ndiff:\n%s", err, b, diff)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// gnuDiff is what diff(1) -u says of a and b, labelled a/f and b/f.
func gnuDiff(t *testing.T, a, b string) string {
	t.Helper()
	if _, err := exec.LookPath("diff"); err != nil {
		testenv.Skip(t, nil, "diff(1) is not installed: apt-get install diffutils")
	}
	dir := t.TempDir()
	pa, pb := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	os.WriteFile(pa, []byte(a), 0o644)
	os.WriteFile(pb, []byte(b), 0o644)
	out, _ := exec.Command("diff", "-u", "--label", "a/f", "--label", "b/f", pa, pb).Output() // exit 1: they differ
	return string(out)
}

// TestUnifiedDiff: patch(1) turns the old side into the new, byte for
// byte, with and without final newlines; headers and ranges are diff -u's.
func TestUnifiedDiff(t *testing.T) {
	var long, longer strings.Builder
	for i := 0; i < 300; i++ {
		long.WriteString("line " + strings.Repeat("x", i%7) + "\n")
		if i%50 == 7 {
			longer.WriteString("inserted\n")
		}
		if i%90 != 3 {
			longer.WriteString("line " + strings.Repeat("x", i%7) + "\n")
		}
		if i == 0 || i%7 == 0 {
			long.WriteString("\n")
			longer.WriteString("\n")
		}
	}
	for _, tc := range []struct{ name, a, b, want string }{
		{"added", "", "one\ntwo\n", "--- a/f\n+++ b/f\n@@ -0,0 +1,2 @@\n+one\n+two\n"},
		{"one line", "", "one\n", "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+one\n"},
		{"emptied", "one\n", "", "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-one\n"},
		{"no final newline added", "a\nb", "a\nb\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n"},
		{"no final newline kept", "a\nb", "a\nc", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"middle", "1\n2\n3\n4\n5\n6\n7\n8\n9\n", "1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"--- a/f\n+++ b/f\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"equal", "same\n", "same\n", ""},
		{"long", long.String(), longer.String(), ""},
		{"crlf", "a\r\nb\r\n", "a\r\nc\r\n", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\r\n-b\r\n+c\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, err := linediff.Unified(ctx, "a/f", "b/f", []byte(tc.a), []byte(tc.b))
			if err != nil {
				t.Fatal(err)
			}
			if tc.want != "" && d != tc.want {
				t.Errorf("diff:\n%q\nwant:\n%q", d, tc.want)
			}
			if tc.want != "" {
				if gnu := gnuDiff(t, tc.a, tc.b); gnu != d {
					t.Errorf("diff -u says:\n%q\nwe say:\n%q", gnu, d)
				}
			}
			if tc.a == tc.b {
				if d != "" {
					t.Errorf("equal sides: %q", d)
				}
				return
			}
			if got := applyPatch(t, []byte(tc.a), d); !bytes.Equal(got, []byte(tc.b)) {
				t.Errorf("patched:\n%q\nwant:\n%q", got, tc.b)
			}
		})
	}
}

// TestChangesThreeActors: an agent through the API, a person on the
// mount and a process outside each change files; each row names its actor,
// and the diffs of the added files are exact.
func TestChangesThreeActors(t *testing.T) {
	s, root, _ := coretest.Watched(t)
	mk(t, root, map[string]string{"shared/readme": "before\n"})
	coretest.SettleOutside(t, s, root) // the kernel watch has told the tree as it was
	agent := core.WithActor(ctx, core.Actor{Origin: journal.API, Name: "agent-1"})
	person := core.WithActor(ctx, core.Actor{Origin: journal.Mirror, Pid: 4242, Uid: 1000, Comm: "vim"})
	start := s.Journal().Seq()
	files := map[string]string{
		"/agent.txt":  "written by the agent\nline 2\n",
		"/person.txt": "typed by a person\n",
		"/outside.go": "package outside\n",
	}
	if _, err := s.WriteFile(agent, "/agent.txt", strings.NewReader(files["/agent.txt"]), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteFile(person, "/person.txt", strings.NewReader(files["/person.txt"]), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteFile(person, "/shared/readme", strings.NewReader("after\n"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "outside.go"), []byte(files["/outside.go"]), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "A /agent.txt\nA /outside.go\nA /person.txt\nM /shared/readme"
	var cs Set
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if cs, err = Since(ctx, s, Query{SinceSeq: start, Diff: true}); err != nil {
			t.Fatal(err)
		}
		if fmtRows(cs.Rows) == want || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the kernel watch tells the outside write
	}
	if got := fmtRows(cs.Rows); got != want {
		t.Fatalf("rows:\n%s\nwant:\n%s", got, want)
	}
	who := map[string]string{"/agent.txt": "agent-1", "/outside.go": "external", "/person.txt": "fuse:vim", "/shared/readme": "fuse:vim"}
	origin := map[string]journal.Origin{"/agent.txt": journal.API, "/outside.go": journal.External, "/person.txt": journal.Mirror, "/shared/readme": journal.Mirror}
	for _, r := range cs.Rows {
		if strings.Join(r.Actors, ",") != who[r.Path] || r.Last.Origin != origin[r.Path] || r.First.Seq <= start {
			t.Errorf("%s: actors %v, last origin %s, first seq %d", r.Path, r.Actors, r.Last.Origin, r.First.Seq)
		}
		if r.Path == "/person.txt" && (r.Last.Pid != 4242 || r.Last.Comm != "vim") {
			t.Errorf("%s: pid %d comm %q", r.Path, r.Last.Pid, r.Last.Comm)
		}
		content, added := files[r.Path]
		if !added {
			if r.Diff != "" || !strings.Contains(r.DiffUnavailable, "no checkpoint") {
				t.Errorf("%s: diff %q unavailable %q", r.Path, r.Diff, r.DiffUnavailable)
			}
			continue
		}
		if r.Size != int64(len(content)) || r.DiffUnavailable != "" || r.Binary || r.DiffTruncated {
			t.Errorf("%s: size %d, unavailable %q, binary %v, truncated %v", r.Path, r.Size, r.DiffUnavailable, r.Binary, r.DiffTruncated)
		}
		if !strings.HasPrefix(r.Diff, "--- a"+r.Path+"\n+++ b"+r.Path+"\n@@ -0,0 +1") {
			t.Errorf("%s: diff %q", r.Path, r.Diff)
		}
		if got := applyPatch(t, nil, r.Diff); string(got) != content {
			t.Errorf("%s: patched %q, want %q", r.Path, got, content)
		}
	}
	for actor, want := range map[string]string{"agent-1": "A /agent.txt", "fuse:vim": "A /person.txt\nM /shared/readme", "external": "A /outside.go"} {
		cs, err := Since(ctx, s, Query{SinceSeq: start, Actor: actor})
		if err != nil {
			t.Fatal(err)
		}
		if got := fmtRows(cs.Rows); got != want {
			t.Errorf("actor %s: %q, want %q", actor, got, want)
		}
	}
}

// TestChangesDiffBounds: binary files, symlinks, the per-row bound (cut
// at a line's end) and the cap on what is read.
func TestChangesDiffBounds(t *testing.T) {
	s, root := openTemp(t)
	big := strings.Repeat("0123456789abcdef\n", 1000) // 17,000 bytes
	mk(t, root, map[string]string{
		"bin":   "text\x00more",
		"latin": "caf\xe9\n",
		"link":  "->bin",
		"big":   big,
		"huge":  strings.Repeat("x", maxDiffInput+1),
	})
	for _, p := range []string{"/bin", "/latin", "/link", "/big", "/huge"} {
		s.Journal().Append(ev(journal.Create, p))
	}
	cs, err := Since(ctx, s, Query{Diff: true, MaxDiffBytes: 1000})
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]Row{}
	for _, r := range cs.Rows {
		rows[r.Path] = r
	}
	if r := rows["/bin"]; !r.Binary || r.Diff != "" {
		t.Errorf("bin: %+v", r)
	}
	if r := rows["/latin"]; !r.Binary {
		t.Errorf("latin: binary %v", r.Binary)
	}
	if r := rows["/link"]; r.DiffUnavailable != "a symlink now" {
		t.Errorf("link: %q", r.DiffUnavailable)
	}
	if r := rows["/huge"]; !strings.HasPrefix(r.DiffUnavailable, "larger than") {
		t.Errorf("huge: %q", r.DiffUnavailable)
	}
	r := rows["/big"]
	if !r.DiffTruncated || len(r.Diff) > 1000 || len(r.Diff) < 900 || !strings.HasSuffix(r.Diff, "\n") ||
		!strings.HasPrefix(r.Diff, "--- a/big\n+++ b/big\n@@ -0,0 +1,1000 @@\n+0123") {
		t.Errorf("big: truncated %v, %d bytes, %q…", r.DiffTruncated, len(r.Diff), r.Diff[:min(len(r.Diff), 60)])
	}
}

// TestChangesSinceCheckpoint: the old side of a modified file is the
// checkpoint's copy; the diff is exact.
func TestChangesSinceCheckpoint(t *testing.T) {
	root := t.TempDir()
	s, err := core.Open("default", root, core.Options{StateDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	old := "one\ntwo\nthree\n"
	mk(t, root, map[string]string{"m.txt": old, "gone.txt": "bye\n", "save.txt": "v1\n", "r.txt": "a\nb\n", "u.txt": "u\n"})
	cp, err := checkpoint.Create(ctx, s, checkpoint.Options{Name: "before"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteFile(ctx, "/m.txt", strings.NewReader("one\n2\nthree\n"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, "/gone.txt", false); err != nil {
		t.Fatal(err)
	}
	// A save by rename: the new content under a temp name, renamed over.
	if _, err := s.WriteFile(ctx, "/.save.tmp", strings.NewReader("v2\n"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Move(ctx, "/.save.tmp", "/save.txt", core.MoveOptions{Overwrite: true}); err != nil {
		t.Fatal(err)
	}
	// Renamed, then written: the diff is against the old path's content.
	if err := s.Move(ctx, "/r.txt", "/r2.txt", core.MoveOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.WriteFile(ctx, "/r2.txt", strings.NewReader("a\nB\n"), core.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, q := range []Query{{SinceCheckpoint: cp.ID, Diff: true}, {SinceSeq: cp.Seq, Diff: true}} {
		cs, err := Since(ctx, s, q)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := fmtRows(cs.Rows), "D /gone.txt\nM /m.txt\nR /r2.txt <- /r.txt\nM /save.txt"; got != want {
			t.Fatalf("%+v: rows %q, want %q", q, got, want)
		}
		if d := cs.Rows[2].Diff; !strings.HasPrefix(d, "--- a/r.txt\n+++ b/r2.txt\n") {
			t.Errorf("renamed: diff %q", d)
		}
		for i, want := range []struct{ old, new string }{{"bye\n", ""}, {old, "one\n2\nthree\n"}, {"a\nb\n", "a\nB\n"}, {"v1\n", "v2\n"}} {
			r := cs.Rows[i]
			if r.DiffUnavailable != "" || r.Binary {
				t.Fatalf("%s: unavailable %q binary %v", r.Path, r.DiffUnavailable, r.Binary)
			}
			if got := applyPatch(t, []byte(want.old), r.Diff); string(got) != want.new {
				t.Errorf("%s: patched %q, want %q", r.Path, got, want.new)
			}
		}
	}
	// Since a seq after the checkpoint: a path changed in between has no
	// known old content; one untouched since the checkpoint has.
	mid := s.Journal().Seq()
	for _, p := range []string{"/m.txt", "/u.txt"} {
		if _, err := s.WriteFile(ctx, p, strings.NewReader("again\n"), core.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cs, err := Since(ctx, s, Query{SinceSeq: mid, Diff: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmtRows(cs.Rows); got != "M /m.txt\nM /u.txt" {
		t.Fatalf("since %d: %q", mid, got)
	}
	if m := cs.Rows[0]; m.Diff != "" || !strings.Contains(m.DiffUnavailable, "changed between checkpoint") {
		t.Errorf("m.txt since %d: diff %q unavailable %q", mid, m.Diff, m.DiffUnavailable)
	}
	if u := cs.Rows[1]; u.DiffUnavailable != "" || string(applyPatch(t, []byte("u\n"), u.Diff)) != "again\n" {
		t.Errorf("u.txt since %d: diff %q unavailable %q", mid, u.Diff, u.DiffUnavailable)
	}
}
