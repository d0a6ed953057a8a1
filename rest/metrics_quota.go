package rest

import (
	"github.com/prometheus/client_golang/prometheus"

	"sandfs/core"
	"sandfs/core/checkpoint"
)

// The quota's figures in /metrics, and the checkpoint store's, per sandbox, read at scrape time from
// core (Sandbox.Usage: counts kept by the operations, corrected by scans;
// core/quota). A quota of 0 is no bound.
var (
	descUsageBytes   = prometheus.NewDesc("sandfs_sandbox_usage_bytes", "Bytes the sandbox's regular files hold (each inode once), by sandbox.", []string{"sandbox"}, nil)
	descUsageEntries = prometheus.NewDesc("sandfs_sandbox_usage_entries", "Names in the sandbox's tree (the root not counted), by sandbox.", []string{"sandbox"}, nil)
	descQuotaBytes   = prometheus.NewDesc("sandfs_sandbox_quota_bytes", "The sandbox's byte quota (0: no bound), by sandbox.", []string{"sandbox"}, nil)
	descQuotaEntries = prometheus.NewDesc("sandfs_sandbox_quota_entries", "The sandbox's entry quota (0: no bound), by sandbox.", []string{"sandbox"}, nil)

	descCpStore      = prometheus.NewDesc("sandfs_checkpoint_store_bytes", "What the sandbox's checkpoint store takes on disk, by sandbox (once a checkpoint was asked of it).", []string{"sandbox"}, nil)
	descCpStoreLimit = prometheus.NewDesc("sandfs_checkpoint_store_limit_bytes", "The bound of the sandbox's checkpoint store (--checkpoint-max-size; 0: none), by sandbox.", []string{"sandbox"}, nil)

	quotaDescs = []*prometheus.Desc{descUsageBytes, descUsageEntries, descQuotaBytes, descQuotaEntries, descCpStore, descCpStoreLimit}
)

// collectQuota sends the usage and quota of sandbox name.
func collectQuota(ch chan<- prometheus.Metric, name string, sb *core.Sandbox) {
	u := sb.Quota().Usage()
	for _, m := range []struct {
		d *prometheus.Desc
		v int64
	}{{descUsageBytes, u.Bytes}, {descUsageEntries, u.Entries}, {descQuotaBytes, u.Quota.Bytes}, {descQuotaEntries, u.Quota.Entries}} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.GaugeValue, float64(m.v), name)
	}
	if size, limit, ok := checkpoint.StoreBytes(sb); ok {
		ch <- prometheus.MustNewConstMetric(descCpStore, prometheus.GaugeValue, float64(size), name)
		ch <- prometheus.MustNewConstMetric(descCpStoreLimit, prometheus.GaugeValue, float64(max(limit, 0)), name)
	}
}
