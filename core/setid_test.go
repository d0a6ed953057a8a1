package core

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandfs/internal/testenv"

	"golang.org/x/sys/unix"
)

// TestSetid: without AllowSetid no API operation makes a setuid or setgid
// non-directory: asked for, it is refused (EPERM, ErrSetid) and nothing
// changes; inherited, the bits are dropped. With AllowSetid they are kept,
// but for Copy, which drops them as GNU cp does.
func TestSetid(t *testing.T) {
	type check struct {
		path string
		mode uint32 // want (mode&07777)
	}
	cases := []struct {
		name     string
		allow    bool
		run      func(s *Sandbox, root string) error
		refused  bool
		want     []check
		wantNone []string // must not exist
	}{
		{"chmod file 4755 refused", false, func(s *Sandbox, _ string) error { _, err := s.Chmod(ctx, "/f", 0o4755, false); return err },
			true, []check{{"f", 0o644}}, nil},
		{"chmod file 2755 refused", false, func(s *Sandbox, _ string) error { _, err := s.Chmod(ctx, "/f", 0o2755, false); return err },
			true, []check{{"f", 0o644}}, nil},
		{"chmod through a symlink refused", false, func(s *Sandbox, _ string) error { _, err := s.Chmod(ctx, "/lf", 0o4755, false); return err },
			true, []check{{"f", 0o644}}, nil},
		{"chmod dir 2775 allowed", false, func(s *Sandbox, _ string) error { _, err := s.Chmod(ctx, "/d", 0o2775, false); return err },
			false, []check{{"d", 0o2775}}, nil},
		{"chmod recursive 2775 refused", false, func(s *Sandbox, _ string) error { _, err := s.Chmod(ctx, "/d", 0o2775, true); return err },
			true, []check{{"d", 0o755}, {"d/g", 0o644}}, nil},
		{"chmod file 4755 with allow", true, func(s *Sandbox, _ string) error { _, err := s.Chmod(ctx, "/f", 0o4755, false); return err },
			false, []check{{"f", 0o4755}}, nil},
		{"write mode 4755 refused", false, func(s *Sandbox, _ string) error {
			_, err := s.WriteFile(ctx, "/new", strings.NewReader("x"), WriteOptions{Mode: 0o755 | fs.ModeSetuid})
			return err
		}, true, nil, []string{"new"}},
		{"write in place mode 2755 refused", false, func(s *Sandbox, _ string) error {
			_, err := s.WriteInPlace(ctx, "/new", strings.NewReader("x"), InPlaceOptions{Mode: 0o755 | fs.ModeSetgid})
			return err
		}, true, nil, []string{"new"}},
		{"write over setuid drops it", false, func(s *Sandbox, _ string) error {
			_, err := s.WriteFile(ctx, "/suid", strings.NewReader("x"), WriteOptions{})
			return err
		}, false, []check{{"suid", 0o755}}, nil},
		{"write over setuid with allow keeps it", true, func(s *Sandbox, _ string) error {
			_, err := s.WriteFile(ctx, "/suid", strings.NewReader("x"), WriteOptions{})
			return err
		}, false, []check{{"suid", 0o6755}}, nil},
		{"write in place over setuid drops it", false, func(s *Sandbox, _ string) error {
			_, err := s.WriteInPlace(ctx, "/suid", strings.NewReader("x"), InPlaceOptions{})
			return err
		}, false, []check{{"suid", 0o755}}, nil},
		{"upload over setuid drops it", false, func(s *Sandbox, _ string) error {
			_, _, err := s.Upload(ctx, "/suid", strings.NewReader("x"), UploadOptions{})
			return err
		}, false, []check{{"suid", 0o755}}, nil},
		{"copy drops setuid and setgid", false, func(s *Sandbox, _ string) error {
			_, err := s.Copy(ctx, "/sd", "/cp", CopyOptions{})
			return err
		}, false, []check{{"cp", 0o755}, {"cp/x", 0o755}}, nil},
		{"copy drops them with allow too", true, func(s *Sandbox, _ string) error {
			_, err := s.Copy(ctx, "/sd", "/cp", CopyOptions{})
			return err
		}, false, []check{{"cp", 0o755}, {"cp/x", 0o755}}, nil},
		{"preserve drops them on files", false, func(s *Sandbox, _ string) error {
			if _, err := s.Copy(ctx, "/sd", "/cp", CopyOptions{}); err != nil {
				return err
			}
			return s.PreserveAttrs(ctx, "/sd", "/cp")
		}, false, []check{{"cp", 0o2755}, {"cp/x", 0o755}}, nil},
		{"preserve with allow keeps them", true, func(s *Sandbox, _ string) error {
			if _, err := s.Copy(ctx, "/sd", "/cp", CopyOptions{}); err != nil {
				return err
			}
			return s.PreserveAttrs(ctx, "/sd", "/cp")
		}, false, []check{{"cp", 0o2755}, {"cp/x", 0o6755}}, nil},
		{"tar entries never carry them", true, func(s *Sandbox, _ string) error {
			err := extractTar(ctx, s, "/t", testenv.TarOf(t, []testenv.TarEntry{{Name: "x", Body: "x", Mode: 0o6755}, {Name: "sub/", Typ: '5', Mode: 0o2755}}))
			return err
		}, false, []check{{"t/x", 0o755}, {"t/sub", 0o755}}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			mk(t, root, map[string]string{"f": "f", "d/g": "g", "suid": "s", "sd/x": "x", "lf": "->f"})
			os.Chmod(filepath.Join(root, "f"), 0o644)
			os.Chmod(filepath.Join(root, "d"), 0o755)
			os.Chmod(filepath.Join(root, "d/g"), 0o644)
			must(t, unix.Chmod(filepath.Join(root, "suid"), 0o6755)) // (os.Chmod takes Go's mode bits)
			must(t, unix.Chmod(filepath.Join(root, "sd/x"), 0o6755))
			must(t, unix.Chmod(filepath.Join(root, "sd"), 0o2755))
			s, err := Open("default", root, Options{AllowSetid: c.allow})
			must(t, err)
			defer s.Close()
			err = c.run(s, root)
			switch {
			case c.refused && !errors.Is(err, ErrSetid):
				t.Fatalf("got %v, want ErrSetid", err)
			case c.refused && !errors.Is(err, unix.EPERM):
				t.Fatalf("got %v, want it to be EPERM", err)
			case !c.refused && err != nil:
				t.Fatal(err)
			}
			for _, w := range c.want {
				var st unix.Stat_t
				must(t, unix.Stat(filepath.Join(root, w.path), &st))
				if st.Mode&0o7777 != w.mode {
					t.Errorf("%s: mode %04o, want %04o", w.path, st.Mode&0o7777, w.mode)
				}
			}
			for _, p := range c.wantNone {
				if _, err := os.Lstat(filepath.Join(root, p)); err == nil {
					t.Errorf("%s exists after a refusal", p)
				}
			}
		})
	}
}
