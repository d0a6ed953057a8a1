package rest

import (
	"strings"
	"testing"
)

// The publishing to NATS JetStream shows in /metrics for the sandboxes the
// daemon publishes, and not at all for the others.
func TestMetricsEvents(t *testing.T) {
	events := func(sandbox string) (EventsStats, bool) {
		if sandbox != "default" {
			return EventsStats{}, false
		}
		return EventsStats{Backlog: 7, Published: 40, Failed: 3, Lost: 2}, true
	}
	for _, tc := range []struct {
		name   string
		events func(string) (EventsStats, bool)
		want   []string
		absent []string
	}{
		{"published", events, []string{
			`sandfs_events_nats_backlog{sandbox="default"} 7`,
			`sandfs_events_nats_published_total{sandbox="default"} 40`,
			`sandfs_events_nats_failed_total{sandbox="default"} 3`,
			`sandfs_events_nats_lost_total{sandbox="default"} 2`,
		}, nil},
		{"off", nil, nil, []string{"sandfs_events_nats_"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, harnessOpts{Token: "tok", Events: tc.events})
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
