package cas

import (
	"bytes"
	"errors"
	"io"
	"os"
	"testing"

	"sandfs/internal/testenv"
)

// Both kinds of temp (temp.go) store the same objects and leave nothing
// beside them, whether the object is new, already there, or refused. A
// store opened by root on a filesystem with O_TMPFILE takes the nameless
// kind.
func TestTempKinds(t *testing.T) {
	for _, anon := range []bool{true, false} {
		name := map[bool]string{true: "nameless", false: "named"}[anon]
		t.Run(name, func(t *testing.T) {
			s, dir := open(t)
			if anon && !s.anon {
				if os.Geteuid() == 0 {
					t.Fatalf("a store opened by root on %s takes named temps", dir)
				}
				testenv.Skip(t, nil, "nameless temps need CAP_DAC_READ_SEARCH (euid %d)", os.Geteuid())
			}
			s.anon = anon
			body := bytes.Repeat([]byte("object;"), 3000)
			src, err := os.CreateTemp(t.TempDir(), "src")
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if _, err := src.Write(body); err != nil {
				t.Fatal(err)
			}
			o, err := s.Put(src)
			if err != nil || !o.Added || o.Size != int64(len(body)) {
				t.Fatalf("put: %+v, %v", o, err)
			}
			if again, err := s.PutNamed(o.Hash, bytes.NewReader(body), int64(len(body))); err != nil || again.Added {
				t.Fatalf("put again by name: %+v, %v", again, err)
			}
			other := []byte("another object")
			if _, err := s.PutNamed(o.Hash, bytes.NewReader(other), 100); !errors.Is(err, ErrMismatch) {
				t.Fatalf("bytes under another's name: %v, want ErrMismatch", err)
			}
			b, err := s.PutBytes(other)
			if err != nil || !b.Added {
				t.Fatalf("put bytes: %+v, %v", b, err)
			}
			for h, want := range map[string][]byte{o.Hash: body, b.Hash: other} {
				f, err := s.OpenObject(h)
				if err != nil {
					t.Fatal(err)
				}
				got, _ := io.ReadAll(f)
				f.Close()
				if !bytes.Equal(got, want) {
					t.Errorf("object %s: %d bytes, want %d", h, len(got), len(want))
				}
			}
			ents, _ := os.ReadDir(dir)
			for _, e := range ents {
				if !e.IsDir() {
					t.Errorf("left beside the objects: %s", e.Name())
				}
			}
		})
	}
}
