package core

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestWriteFileEcho: a WriteFile or Upload that lands ends its claim at
// its rename's echo, with no sentinel, and every echo of it is held back
// (the journal has the API's events alone, and the outside change after
// them); one that fails ends by a sentinel and tells nothing.
func TestWriteFileEcho(t *testing.T) {
	writeFile := func(s *Sandbox, p string, i int) error {
		_, err := s.WriteFile(context.Background(), p, strings.NewReader(fmt.Sprint("v", i)), WriteOptions{})
		return err
	}
	upload := func(s *Sandbox, p string, i int) error {
		_, _, err := s.Upload(context.Background(), p, strings.NewReader(fmt.Sprint("v", i)), UploadOptions{})
		return err
	}
	uploadFailing := func(s *Sandbox, p string, i int) error {
		_, _, err := s.Upload(context.Background(), p, io.MultiReader(strings.NewReader("x"), errReader{}), UploadOptions{})
		return err
	}
	for _, tc := range []struct {
		name      string
		write     func(s *Sandbox, p string, i int) error
		path      string
		writes    int
		want      string // the journal after the writes, then an outside create of /g
		sentinels int
	}{
		{"write: new, then over it", writeFile, "/f", 3, "api create /f\napi write /f\napi write /f\napi write /f", 0},
		{"write: in a subdirectory", writeFile, "/d/f", 2, "api create /d/f\napi write /d/f\napi write /d/f", 0},
		{"write: over a directory (EISDIR)", writeFile, "/d", 1, "", 1},
		{"upload: new, then over it", upload, "/f", 2, strings.Repeat("api create /{p}\napi write /{p}\napi chmod /{p}\napi rename /f <- /{p}\n", 2), 0},
		{"upload: the body fails half-way", uploadFailing, "/f", 1, "api create /{p}\napi remove /{p}", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, root, w := watched(t)
			if err := os.Mkdir(filepath.Join(root, "d"), 0o755); err != nil {
				t.Fatal(err)
			}
			settle(t, s, w, 0)
			cursor := s.Journal().Seq()
			s.watch.SetEchoWait(time.Minute) // an echo that never came would hold the claim
			marked := s.watch.Marked()
			for i := 0; i < tc.writes; i++ {
				if err := tc.write(s, tc.path, i); (err != nil) != (tc.sentinels > 0) {
					t.Fatalf("write %d: %v", i, err)
				}
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
				open := s.watch.OpenClaims()
				if open == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d claims still open", open)
				}
			}
			sentinels := s.watch.Marked() - marked
			if sentinels != tc.sentinels {
				t.Errorf("%d sentinels marked, want %d", sentinels, tc.sentinels)
			}
			if err := os.WriteFile(filepath.Join(root, "g"), nil, 0o644); err != nil {
				t.Fatal(err)
			}
			// An upload's spool names are random: shown as {p}.
			got := fmtEvents(settle(t, s, w, cursor))
			got = regexp.MustCompile(`\.sandfs-upload-[0-9a-f]{16}\.part`).ReplaceAllString(got, "{p}")
			want := strings.TrimPrefix(strings.TrimSuffix(tc.want, "\n")+"\nexternal create /g", "\n")
			if got != want {
				t.Errorf("events: got\n%s\nwant\n%s", got, want)
			}
		})
	}
}
