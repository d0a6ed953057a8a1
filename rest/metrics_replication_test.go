package rest

import (
	"strings"
	"testing"
)

// The checkpoints' replication shows in /metrics for the sandboxes the
// daemon replicates, and not at all for the others.
func TestMetricsReplication(t *testing.T) {
	repl := func(sandbox string) (ReplicationStats, bool) {
		if sandbox != "default" {
			return ReplicationStats{}, false
		}
		return ReplicationStats{Behind: 2, BytesBehind: 4096, Objects: 103, ObjectBytes: 90000, Manifests: 5, Unqueued: 1, Failed: 3}, true
	}
	for _, tc := range []struct {
		name   string
		repl   func(string) (ReplicationStats, bool)
		want   []string
		absent []string
	}{
		{"replicated", repl, []string{
			`sandfs_replication_checkpoints_behind{sandbox="default"} 2`,
			`sandfs_replication_bytes_behind{sandbox="default"} 4096`,
			`sandfs_replication_objects_sent_total{sandbox="default"} 103`,
			`sandfs_replication_object_bytes_sent_total{sandbox="default"} 90000`,
			`sandfs_replication_manifests_sent_total{sandbox="default"} 5`,
			`sandfs_replication_unqueued_total{sandbox="default"} 1`,
			`sandfs_replication_failed_total{sandbox="default"} 3`,
		}, nil},
		{"off", nil, nil, []string{"sandfs_replication_"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{Token: "tok", Replication: tc.repl})
			r := h.do(t, req{Method: "GET", Target: "/metrics"})
			wantStatus(t, r, 200)
			text := string(r.Body)
			for _, w := range tc.want {
				if !strings.Contains(text, w+"\n") {
					t.Errorf("metrics lack %q", w)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(text, a) {
					t.Errorf("metrics have %q", a)
				}
			}
		})
	}
}
