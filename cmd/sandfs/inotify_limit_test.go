package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

func TestRaiseInotifyInstances(t *testing.T) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tc := range []struct {
		name      string
		cur       string
		n         int
		want      int
		wantFile  string
		wantError bool
	}{
		{"raised", "128\n", 8192, 8192, "8192\n", false},
		{"already higher", "10000\n", 8192, 10000, "10000\n", false},
		{"zero leaves it", "128\n", 0, 128, "128\n", false},
		{"not a number", "many\n", 8192, 0, "many\n", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "max_user_instances")
			if err := os.WriteFile(f, []byte(tc.cur), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := raiseInotifyInstances(f, tc.n, log)
			if (err != nil) != tc.wantError || got != tc.want {
				t.Fatalf("raiseInotifyInstances(%q, %d) = %d, %v; want %d, error %v", tc.cur, tc.n, got, err, tc.want, tc.wantError)
			}
			if b, _ := os.ReadFile(f); string(b) != tc.wantFile {
				t.Fatalf("file holds %q, want %q", b, tc.wantFile)
			}
		})
	}
	if _, err := raiseInotifyInstances(filepath.Join(t.TempDir(), "missing"), 10, log); err == nil {
		t.Fatal("a missing file raised nothing and said nothing")
	}
}
