package daemon

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/core/checkpoint"
)

// Held roots after moves: at most maxHeld, the oldest let go first, each
// unserved but watched; one written behind its back is closed when taken,
// one untouched is served again as it was; the rest close with DIR.
func TestHeldRoots(t *testing.T) {
	th := newTestHost(t, core.Quota{})
	names := make([]string, maxHeld+1)
	for i := range names {
		names[i] = fmt.Sprintf("s%d", i)
		if err := os.MkdirAll(filepath.Join(th.dir, names[i], "d"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sbs := map[string]*core.Sandbox{}
	for _, n := range names {
		sbs[n] = waitSandbox(t, th, n)
		<-sbs[n].Watch().Ready()
		<-sbs[n].Reconciled()
	}
	cps := map[string]string{}
	for _, n := range names {
		cp, err := checkpoint.Create(context.Background(), sbs[n], checkpoint.Options{Reason: ReasonMove})
		if err != nil {
			t.Fatal(err)
		}
		cps[n] = cp.ID
		th.d.mu.Lock()
		th.d.hold(n, cp)
		th.d.mu.Unlock()
		if th.reg.Get(n) != nil {
			t.Fatalf("%s is still served after it was held", n)
		}
	}
	th.d.mu.Lock()
	_, oldest := th.d.held[names[0]]
	held := len(th.d.held)
	th.d.mu.Unlock()
	if held != maxHeld || oldest || !sbs[names[0]].Closed() {
		t.Fatalf("%d held (want %d), the oldest held %v, closed %v", held, maxHeld, oldest, sbs[names[0]].Closed())
	}
	// A scan of DIR meanwhile (the watch overflowed) serves no held root
	// again behind the move's back: each stays held, its sandbox open,
	// and says so, not that another daemon serves the root.
	th.d.Rescan()
	logs := th.logText()
	if strings.Contains(logs, "another daemon") {
		t.Fatalf("a scan of DIR tried to serve a held root again:\n%s", logs)
	}
	for _, n := range names[1:] {
		if th.reg.Get(n) != nil {
			t.Fatalf("held %s is served again after a scan of DIR\n%s", n, logs)
		}
		if !logSays(logs, "held here for a move back", "name="+n) {
			t.Fatalf("held %s: the scan did not say it is held\n%s", n, logs)
		}
		if sbs[n].Closed() || !sbs[n].Watch().Running() {
			t.Fatalf("held %s: closed %v, watched %v", n, sbs[n].Closed(), sbs[n].Watch().Running())
		}
	}

	// Written behind its back, s1 is closed when taken; s2, untouched, is
	// served again on the same sandbox, its journal where the move left it.
	if err := os.WriteFile(filepath.Join(th.dir, "s1", "d", "behind.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	th.d.mu.Lock()
	hr1 := th.d.takeHeld("s1")
	hr2 := th.d.takeHeld("s2")
	var err error
	if hr2 != nil {
		err = th.h.resume("s2", hr2.e, core.Quota{})
	}
	th.d.mu.Unlock()
	if hr1 != nil || !sbs["s1"].Closed() {
		t.Fatalf("s1, written while held: taken %v, closed %v", hr1 != nil, sbs["s1"].Closed())
	}
	if hr2 == nil || err != nil || hr2.cp != cps["s2"] {
		t.Fatalf("s2, untouched: taken %v, served again: %v", hr2 != nil, err)
	}
	if th.reg.Get("s2") != sbs["s2"] || !checkpoint.Unchanged(sbs["s2"], cps["s2"]) {
		t.Fatalf("s2 is not served again as the sandbox it was, unchanged")
	}

	th.d.Close()
	for _, n := range names[3:] {
		if !sbs[n].Closed() {
			t.Errorf("held %s is open after DIR closed", n)
		}
	}
}

// waitSandbox waits until DIR's name is served, and answers its sandbox.
func waitSandbox(t *testing.T, th *testHost, name string) *core.Sandbox {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(5 * time.Millisecond) {
		if sb := th.reg.Get(name); sb != nil {
			return sb
		}
		if time.Now().After(deadline) {
			t.Fatalf("sandbox %s not served\n%s", name, th.logText())
		}
	}
}

// logSays reports whether a line of logs holds msg and ends with attr.
func logSays(logs, msg, attr string) bool {
	for _, l := range strings.Split(logs, "\n") {
		if strings.Contains(l, msg) && strings.HasSuffix(strings.TrimSpace(l), attr) {
			return true
		}
	}
	return false
}
