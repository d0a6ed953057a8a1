package rest

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"sandfs/core"
	"sandfs/internal/testenv"
)

// TestStateFull507: while the journal's disk is full, a write, an upload
// and a tar of each family are 507 in the family's shape saying why, the
// tree unchanged; /health is 503 with the reason and /metrics has the
// gauge. Once space returns, both say so by themselves and writes pass.
func TestStateFull507(t *testing.T) {
	state := testenv.Tmpfs(t, "size=40m") // the journal's tail takes 32 MiB
	h := newNamedHarnessWith(t, core.Options{StateDir: state})
	h.writeFile(t, "/a", "old a")
	h.mkdir(t, "/d")
	<-h.def.SweepDone()
	filler := testenv.Fill(t, state)
	deadline := time.Now().Add(time.Minute)
	for i := 0; !h.def.StateFull(); i++ {
		if time.Now().After(deadline) {
			t.Fatal("the journal never reported its disk full")
		}
		// Each mkdir is an event; the sync's commit finds the disk full.
		h.def.Mkdir(t.Context(), "/m/"+strings.Repeat("x", 1+i%100), true, 0o755)
		h.def.History().Sync()
	}
	for _, c := range growthRequests() {
		t.Run(c.name, func(t *testing.T) {
			before := snapshot(t, h.root)
			detail := refusedDetail(t, c, h.do(t, c.req(t)))
			if !strings.Contains(detail, c.path+": the daemon's state disk is full") {
				t.Errorf("detail %q does not say the state disk is full", detail)
			}
			if d := snapshotDiff(before, snapshot(t, h.root)); d != "" {
				t.Fatalf("a refused write changed the tree:\n%s", d)
			}
			h.wantFile(t, "/a", "old a")
			wantNoTemp(t, h.root)
		})
	}
	r := h.get(t, "/health")
	var health healthResponse
	if err := json.Unmarshal(r.Body, &health); err != nil || r.Status != 503 {
		t.Fatalf("/health with the state disk full: %d %s", r.Status, r.Body)
	}
	if health.Status != "degraded" || health.History != "state disk full" || health.Histories["default"] != "state disk full" || health.Histories["other"] != "" {
		t.Errorf("/health = %+v", health)
	}
	wantMetric(t, h.harness, `sandfs_journal_store_failing{reason="state_full",sandbox="default"} 1`)
	wantMetric(t, h.harness, `sandfs_journal_store_failing{reason="state_full",sandbox="other"} 0`)

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(time.Minute)
	for h.get(t, "/health").Status != 200 {
		if time.Now().After(deadline) {
			t.Fatal("/health not 200 a minute after space returned")
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantMetric(t, h.harness, `sandfs_journal_store_failing{reason="state_full",sandbox="default"} 0`)
	for _, c := range growthRequests() {
		if r := h.do(t, c.req(t)); r.Status >= 300 {
			t.Errorf("%s once space returned: %d %s", c.name, r.Status, r.Body)
		}
	}
}

// wantMetric fails unless GET /metrics has the line.
func wantMetric(t *testing.T, h *harness, line string) {
	t.Helper()
	r := h.get(t, "/metrics")
	if !strings.Contains(string(r.Body), "\n"+line+"\n") {
		t.Errorf("/metrics has no line %q", line)
	}
}
