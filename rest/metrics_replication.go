package rest

import "github.com/prometheus/client_golang/prometheus"

// The checkpoints' replication to the fleet (--replicate; the daemon wires
// Config.Replication): per sandbox, what is not yet in the fleet, and what
// was sent.
var (
	descReplBehind      = prometheus.NewDesc("sandfs_replication_checkpoints_behind", "Checkpoints made and not yet replicated to NATS JetStream (their manifest not in the KV), by sandbox.", []string{"sandbox"}, nil)
	descReplBytesBehind = prometheus.NewDesc("sandfs_replication_bytes_behind", "Content bytes the checkpoints not yet replicated added to the local store, by sandbox.", []string{"sandbox"}, nil)
	descReplObjects     = prometheus.NewDesc("sandfs_replication_objects_sent_total", "Objects sent to the objects bucket since start (those the bucket had are not sent), by sandbox.", []string{"sandbox"}, nil)
	descReplObjectBytes = prometheus.NewDesc("sandfs_replication_object_bytes_sent_total", "Bytes of the objects sent to the objects bucket since start, by sandbox.", []string{"sandbox"}, nil)
	descReplManifests   = prometheus.NewDesc("sandfs_replication_manifests_sent_total", "Checkpoint manifests sent to the sandbox's KV bucket since start, by sandbox.", []string{"sandbox"}, nil)
	descReplUnqueued    = prometheus.NewDesc("sandfs_replication_unqueued_total", "Checkpoints the replicator's full queue did not hold (sent later from the store), by sandbox.", []string{"sandbox"}, nil)
	descReplFailed      = prometheus.NewDesc("sandfs_replication_failed_total", "Sends to NATS JetStream that failed (tried again), by sandbox.", []string{"sandbox"}, nil)
)

var replicationDescs = []*prometheus.Desc{descReplBehind, descReplBytesBehind, descReplObjects, descReplObjectBytes,
	descReplManifests, descReplUnqueued, descReplFailed}

func (c collector) collectReplication(ch chan<- prometheus.Metric, name string) {
	if c.s.replication == nil {
		return
	}
	st, ok := c.s.replication(name)
	if !ok {
		return
	}
	ch <- prometheus.MustNewConstMetric(descReplBehind, prometheus.GaugeValue, float64(st.Behind), name)
	ch <- prometheus.MustNewConstMetric(descReplBytesBehind, prometheus.GaugeValue, float64(st.BytesBehind), name)
	ch <- prometheus.MustNewConstMetric(descReplObjects, prometheus.CounterValue, float64(st.Objects), name)
	ch <- prometheus.MustNewConstMetric(descReplObjectBytes, prometheus.CounterValue, float64(st.ObjectBytes), name)
	ch <- prometheus.MustNewConstMetric(descReplManifests, prometheus.CounterValue, float64(st.Manifests), name)
	ch <- prometheus.MustNewConstMetric(descReplUnqueued, prometheus.CounterValue, float64(st.Unqueued), name)
	ch <- prometheus.MustNewConstMetric(descReplFailed, prometheus.CounterValue, float64(st.Failed), name)
}
