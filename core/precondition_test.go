package core

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"sandfs/core/precond"
)

// etagOf is the ETag of root/rel as Stat (followed) gives it, "" if absent.
func etagOf(t *testing.T, s *Sandbox, rel string) string {
	t.Helper()
	info, err := s.Stat(ctx, rel)
	if err != nil {
		return ""
	}
	return ETag(info)
}

// TestPreconditionOps: every conditional change refuses a stale ETag, a
// "*" on a missing target and If-None-Match on an existing one with a
// *precond.Error naming the current ETag, and changes nothing; with
// the right ETag it changes the target.
func TestPreconditionOps(t *testing.T) {
	ops := []struct {
		name   string
		target string // the path the precondition is on
		do     func(s *Sandbox, pre precond.Precondition) error
		after  map[string]string // root-relative file → content after success ("" absent)
	}{
		{"WriteFile", "f", func(s *Sandbox, pre precond.Precondition) error {
			_, err := s.WriteFile(ctx, "f", strings.NewReader("NEW"), WriteOptions{Pre: pre})
			return err
		}, map[string]string{"f": "NEW"}},
		{"WriteInPlace", "f", func(s *Sandbox, pre precond.Precondition) error {
			_, err := s.WriteInPlace(ctx, "f", strings.NewReader("NEW"), InPlaceOptions{Pre: pre})
			return err
		}, map[string]string{"f": "NEW"}},
		{"Upload", "f", func(s *Sandbox, pre precond.Precondition) error {
			_, _, err := s.Upload(ctx, "f", strings.NewReader("NEW"), UploadOptions{Pre: pre})
			return err
		}, map[string]string{"f": "NEW"}},
		{"Move", "f", func(s *Sandbox, pre precond.Precondition) error {
			return s.Move(ctx, "f", "g", MoveOptions{Pre: pre})
		}, map[string]string{"f": "", "g": "OLD"}},
		{"Remove", "f", func(s *Sandbox, pre precond.Precondition) error {
			return s.RemoveWith(ctx, "f", RemoveOptions{Pre: pre})
		}, map[string]string{"f": ""}},
		{"Copy", "f", func(s *Sandbox, pre precond.Precondition) error {
			_, err := s.Copy(ctx, "src", "f", CopyOptions{Overwrite: true, Pre: pre})
			return err
		}, map[string]string{"f": "SRC"}},
	}
	modes(t, func(t *testing.T, s *Sandbox, root string) {
		for _, op := range ops {
			t.Run(op.name, func(t *testing.T) {
				for _, p := range []string{"f", "g", "src"} {
					os.Remove(filepath.Join(root, p))
				}
				mk(t, root, map[string]string{"f": "OLD", "src": "SRC"})
				cur := etagOf(t, s, op.target)
				refuse := func(what string, pre precond.Precondition, want string) {
					t.Helper()
					before := snapshot(t, root)
					err := op.do(s, pre)
					var pe *precond.Error
					if !errors.As(err, &pe) || !errors.Is(err, precond.ErrFailed) {
						t.Fatalf("%s: err = %v, want a *precond.Error", what, err)
					}
					if pe.Current != want {
						t.Errorf("%s: Current = %q, want %q", what, pe.Current, want)
					}
					sameSnapshot(t, what, before, snapshot(t, root))
				}
				refuse("stale", precond.Precondition{IfMatch: []string{`"1-2-3"`}}, cur)
				refuse("if-none-match", precond.Precondition{IfNoneMatch: true}, cur)
				if err := op.do(s, precond.Precondition{IfMatch: []string{`"0-0-0"`, "W/" + cur}}); err != nil {
					t.Fatalf("matching ETag: %v", err)
				}
				for rel, want := range op.after {
					b, err := os.ReadFile(filepath.Join(root, rel))
					if got := string(b); (want == "" && err == nil) || got != want {
						t.Errorf("after: %s = %q (%v), want %q", rel, got, err, want)
					}
				}
				if m := tempLeftovers(t, root); len(m) > 0 {
					t.Errorf("temp files left: %v", m)
				}
			})
		}
		t.Run("missing", func(t *testing.T) {
			os.Remove(filepath.Join(root, "nope"))
			_, err := s.WriteFile(ctx, "nope", strings.NewReader("x"), WriteOptions{Pre: precond.Precondition{IfMatch: []string{"*"}}})
			var pe *precond.Error
			if !errors.As(err, &pe) || pe.Current != "" {
				t.Fatalf("* on a missing file: %v", err)
			}
			_, err = s.WriteInPlace(ctx, "nope", strings.NewReader("x"), InPlaceOptions{Pre: precond.Precondition{IfMatch: []string{"*"}}})
			if !errors.As(err, &pe) || pe.Current != "" {
				t.Fatalf("in place, * on a missing file: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(root, "nope")); err == nil {
				t.Fatal("a refused write created the file")
			}
			var etag string
			if _, err := s.WriteInPlace(ctx, "nope", strings.NewReader("x"), InPlaceOptions{Pre: precond.Precondition{IfNoneMatch: true}, ETag: &etag}); err != nil {
				t.Fatalf("If-None-Match on a missing file: %v", err)
			}
			if got := etagOf(t, s, "nope"); etag != got {
				t.Errorf("ETag told %q, the file has %q", etag, got)
			}
		})
	})
}

// TestPreconditionRace: two writers holding the same ETag race; exactly
// one wins, the other gets precond.ErrFailed, and the file holds the
// winner's bytes.
func TestPreconditionRace(t *testing.T) {
	root := t.TempDir()
	s, err := Open("default", root, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	writers := map[string]func(body string, pre precond.Precondition) error{
		"WriteFile": func(body string, pre precond.Precondition) error {
			_, err := s.WriteFile(ctx, "f", strings.NewReader(body), WriteOptions{Pre: pre})
			return err
		},
		"WriteInPlace": func(body string, pre precond.Precondition) error {
			_, err := s.WriteInPlace(ctx, "f", strings.NewReader(body), InPlaceOptions{Pre: pre})
			return err
		},
	}
	for name, write := range writers {
		t.Run(name, func(t *testing.T) {
			for i := range 200 {
				if err := os.WriteFile(filepath.Join(root, "f"), []byte("base"), 0o644); err != nil {
					t.Fatal(err)
				}
				pre := precond.Precondition{IfMatch: []string{etagOf(t, s, "f")}}
				var wg sync.WaitGroup
				errs := make([]error, 2)
				for w := range 2 {
					wg.Go(func() { errs[w] = write(fmt.Sprintf("writer %d of round %d", w, i), pre) })
				}
				wg.Wait()
				wins := 0
				for w, err := range errs {
					switch {
					case err == nil:
						wins++
						b, _ := os.ReadFile(filepath.Join(root, "f"))
						if want := fmt.Sprintf("writer %d of round %d", w, i); string(b) != want {
							t.Fatalf("round %d: the file holds %q, the winner wrote %q", i, b, want)
						}
					case !errors.Is(err, precond.ErrFailed):
						t.Fatalf("round %d: writer %d: %v", i, w, err)
					}
				}
				if wins != 1 {
					t.Fatalf("round %d: %d writers won, want exactly 1 (%v)", i, wins, errs)
				}
			}
		})
	}
}

// BenchmarkWriteFilePrecondition: what a precondition adds to a replace
// (one stat before the body, one under the lock before the rename, and
// the fstat that tells the new ETag).
func BenchmarkWriteFilePrecondition(b *testing.B) {
	root := b.TempDir()
	s, err := Open("default", root, Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	mk(b, root, map[string]string{"f": "x"})
	for _, cond := range []bool{false, true} {
		b.Run(fmt.Sprintf("precondition=%v", cond), func(b *testing.B) {
			for b.Loop() {
				var o WriteOptions
				if cond {
					info, _ := s.Stat(ctx, "f")
					var etag string
					o.Pre, o.ETag = precond.Precondition{IfMatch: []string{ETag(info)}}, &etag
				}
				if _, err := s.WriteFile(ctx, "f", strings.NewReader("hello"), o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
