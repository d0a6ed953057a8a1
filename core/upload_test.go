package core

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestUploadEventsAndReplace(t *testing.T) {
	root := t.TempDir()
	s, err := Open("default", root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mk(t, root, map[string]string{"d/old.txt": "old"})
	os.Chmod(filepath.Join(root, "d/old.txt"), 0o640)
	ap, n, err := s.Upload(ctx, "/d/old.txt", strings.NewReader("new content"), UploadOptions{})
	if err != nil || ap != "/d/old.txt" || n != 11 {
		t.Fatalf("Upload: %q %d %v", ap, n, err)
	}
	b, _ := os.ReadFile(filepath.Join(root, "d/old.txt"))
	st, _ := os.Stat(filepath.Join(root, "d/old.txt"))
	if string(b) != "new content" || st.Mode().Perm() != 0o640 {
		t.Errorf("after: %q %v, want new content 0640", b, st.Mode())
	}
	ents, _ := os.ReadDir(filepath.Join(root, "d"))
	if len(ents) != 1 {
		t.Errorf("leftovers in d: %v", ents)
	}
	// A failing reader leaves the old content and no spool file.
	if _, _, err := s.Upload(ctx, "/d/old.txt", io.MultiReader(strings.NewReader("x"), errReader{}), UploadOptions{}); err == nil {
		t.Errorf("failing reader: got nil error")
	}
	b, _ = os.ReadFile(filepath.Join(root, "d/old.txt"))
	ents, _ = os.ReadDir(filepath.Join(root, "d"))
	if string(b) != "new content" || len(ents) != 1 {
		t.Errorf("after a failed upload: %q, %d entries", b, len(ents))
	}
	es := journalAll(s)
	var got []string
	for _, e := range es {
		p := e.Path
		if strings.Contains(p, UploadPrefix) {
			p = "PART"
		}
		o := e.OldPath
		if strings.Contains(o, UploadPrefix) {
			o = "PART"
		}
		got = append(got, string(e.Type)+" "+p+" "+o)
	}
	want := []string{"create PART ", "write PART ", "chmod PART ", "rename /d/old.txt PART", "create PART ", "remove PART "}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events:\n got %q\nwant %q", got, want)
	}
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("boom") }
