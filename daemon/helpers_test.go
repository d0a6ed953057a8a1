package daemon

import (
	"strings"
	"sync"
)

// lw guards the test logs' builders.
var lw sync.Mutex

type lockedWriter struct{ b *strings.Builder }

func (w *lockedWriter) Write(p []byte) (int, error) {
	lw.Lock()
	defer lw.Unlock()
	return w.b.Write(p)
}
