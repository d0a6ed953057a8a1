package rest

import "github.com/prometheus/client_golang/prometheus"

// The fleet's stream (--events; the daemon wires Config.Events): per
// sandbox, the events not yet acked by JetStream, and the publish counters.
var (
	descNATSBacklog   = prometheus.NewDesc("sandfs_events_nats_backlog", "Journal events not yet acknowledged by the NATS JetStream stream (journal seq minus the published cursor), by sandbox.", []string{"sandbox"}, nil)
	descNATSPublished = prometheus.NewDesc("sandfs_events_nats_published_total", "Events acknowledged by the NATS JetStream stream since start, by sandbox.", []string{"sandbox"}, nil)
	descNATSFailed    = prometheus.NewDesc("sandfs_events_nats_failed_total", "Publish attempts to the NATS JetStream stream that failed (retried), by sandbox.", []string{"sandbox"}, nil)
	descNATSLost      = prometheus.NewDesc("sandfs_events_nats_lost_total", "Events the journal's retention dropped before they were published, by sandbox.", []string{"sandbox"}, nil)
	descNATSDuplicate = prometheus.NewDesc("sandfs_events_nats_duplicate_total", "Messages the stream acked as duplicates of ones it had (not stored again), by sandbox.", []string{"sandbox"}, nil)
)

var natsDescs = []*prometheus.Desc{descNATSBacklog, descNATSPublished, descNATSFailed, descNATSLost, descNATSDuplicate}

func (c collector) collectEvents(ch chan<- prometheus.Metric, name string) {
	if c.s.events == nil {
		return
	}
	st, ok := c.s.events(name)
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(descNATSBacklog, prometheus.GaugeValue, float64(st.Backlog), name)
	ch <- prometheus.MustNewConstMetric(descNATSPublished, prometheus.CounterValue, float64(st.Published), name)
	ch <- prometheus.MustNewConstMetric(descNATSFailed, prometheus.CounterValue, float64(st.Failed), name)
	ch <- prometheus.MustNewConstMetric(descNATSLost, prometheus.CounterValue, float64(st.Lost), name)
	ch <- prometheus.MustNewConstMetric(descNATSDuplicate, prometheus.CounterValue, float64(st.Duplicate), name)
}
