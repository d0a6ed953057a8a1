package checkpoint

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/core/coretest"
	"sandfs/internal/testenv"
)

var ctx = context.Background()

func modes(t *testing.T, f func(t *testing.T, s *core.Sandbox, root string)) { coretest.Modes(t, f) }

func mk(t testing.TB, dir string, tree map[string]string) { t.Helper(); testenv.Mk(t, dir, tree) }

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// hotVersion is the i-th content a racing writer gives /hot: 256 KiB and
// more, so a torn file would show.
func hotVersion(i int) []byte { return bytes.Repeat([]byte{byte('a' + i%26)}, 256<<10+i) }

// hotRounds is how many times the racing writer writes /hot.
const hotRounds = 100

// raceHot writes /hot in s hotRounds times in the background (versions 1
// to hotRounds), and answers a channel closed when it is done.
func raceHot(t *testing.T, s *core.Sandbox) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= hotRounds; i++ {
			if _, err := s.WriteFile(ctx, "/hot", bytes.NewReader(hotVersion(i)), core.WriteOptions{}); err != nil {
				t.Error(err)
				return
			}
			time.Sleep(time.Duration(i%3) * time.Millisecond)
		}
	}()
	return done
}

// wantWholeHot fails unless the file /hot of root holds one of the
// versions a writer or the operation racing it wrote whole (extra: more
// than raceHot's).
func wantWholeHot(t *testing.T, root string, extra ...int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "hot"))
	if err == nil {
		for i := 0; i <= hotRounds; i++ {
			if bytes.Equal(b, hotVersion(i)) {
				return
			}
		}
		for _, i := range extra {
			if bytes.Equal(b, hotVersion(i)) {
				return
			}
		}
	}
	t.Fatalf("torn file: %d bytes, %v", len(b), err)
}
