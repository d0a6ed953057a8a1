package rest

import (
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/julienschmidt/httprouter"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"sandfs/core"
)

// GET /metrics (api.md §1): Prometheus text. The request path keeps its
// cost low: each route owns its counters (atomics indexed by status) and
// its latency histogram, found through the route's closure rather than a
// label lookup, and the journal's and the mirror's figures are read only
// when scraped. A body is counted by wrapping it only when the request has
// one; the response writer keeps its ReadFrom, so downloads still reach
// sendfile.

// latencyBuckets spans a cached stat (~100 µs) to a long transfer.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// routeStats are the counters of one route.
type routeStats struct {
	method, path string
	status       [500]atomic.Uint64 // by status code - 100
	in, out      atomic.Uint64
	latency      prometheus.Histogram
}

func newRouteStats(rt Route) *routeStats {
	return &routeStats{method: rt.Method, path: rt.Path, latency: prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:        "sandfs_http_request_duration_seconds",
		Help:        "Time from a request's routing to its handler's return, by route.",
		ConstLabels: prometheus.Labels{"method": rt.Method, "route": rt.Path},
		Buckets:     latencyBuckets,
	})}
}

// done records one request answered with status after d; in and out are
// the body bytes read and written.
func (st *routeStats) done(status int, in, out int64, d time.Duration) {
	if status == 0 {
		status = http.StatusOK // the handler wrote nothing: net/http answers 200
	}
	if status >= 100 && status < 600 {
		st.status[status-100].Add(1)
	}
	if in > 0 {
		st.in.Add(uint64(in))
	}
	if out > 0 {
		st.out.Add(uint64(out))
	}
	st.latency.Observe(d.Seconds())
}

// countingBody counts the bytes a handler reads from a request body, and
// remembers whether it read at all and whether it saw the end (drain.go).
type countingBody struct {
	io.ReadCloser
	n       int64
	touched bool // Read was called (an "Expect: 100-continue" was answered)
	eof     bool // the end of the body was read
}

func (b *countingBody) Read(p []byte) (int, error) {
	b.touched = true
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if err == io.EOF {
		b.eof = true
	}
	return n, err
}

var (
	descRequests  = prometheus.NewDesc("sandfs_http_requests_total", "Requests answered, by route and status.", []string{"method", "route", "status"}, nil)
	descBytesIn   = prometheus.NewDesc("sandfs_http_request_bytes_total", "Request body bytes read, by route.", []string{"method", "route"}, nil)
	descBytesOut  = prometheus.NewDesc("sandfs_http_response_bytes_total", "Response body bytes written, by route.", []string{"method", "route"}, nil)
	descEvents    = prometheus.NewDesc("sandfs_journal_events_total", "Journal events, by sandbox, origin and type.", []string{"sandbox", "origin", "type"}, nil)
	descWatchers  = prometheus.NewDesc("sandfs_watchers", "Watchers open, by sandbox.", []string{"sandbox"}, nil)
	descDropped   = prometheus.NewDesc("sandfs_journal_dropped_events_total", "Events a watcher (full buffer) or subscription (reader behind) could not keep, by sandbox.", []string{"sandbox"}, nil)
	descOverflows = prometheus.NewDesc("sandfs_kernel_watch_overflows_total", "Kernel watch queue overflows (events lost before the journal; watchers are told overflow), by sandbox.", []string{"sandbox"}, nil)
	descHistory   = prometheus.NewDesc("sandfs_journal_store_failing", "1 while the durable journal cannot store events (reason: state_full when its disk is full, error otherwise), by sandbox.", []string{"sandbox", "reason"}, nil)
	descFUSE      = prometheus.NewDesc("sandfs_fuse_operations_total", "FUSE mirror operations that reached the daemon, by sandbox and operation (passthrough reads and writes never do).", []string{"sandbox", "op"}, nil)
	descURing     = prometheus.NewDesc("sandfs_fuse_uring_requests_total", "FUSE requests served over io_uring, by sandbox (serve --fuse-uring; 0 where the kernel did not offer it).", []string{"sandbox"}, nil)
)

// collector reads the Server's figures at scrape time.
type collector struct{ s *Server }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range append([]*prometheus.Desc{descRequests, descBytesIn, descBytesOut, descEvents, descWatchers, descDropped, descOverflows, descHistory, descFUSE, descURing}, append(natsDescs, replicationDescs...)...) {
		ch <- d
	}
	for _, d := range quotaDescs {
		ch <- d
	}
	for _, st := range c.s.stats {
		st.latency.Describe(ch)
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.s.stats {
		for i := range st.status {
			if n := st.status[i].Load(); n > 0 {
				ch <- prometheus.MustNewConstMetric(descRequests, prometheus.CounterValue, float64(n), st.method, st.path, strconv.Itoa(i+100))
			}
		}
		ch <- prometheus.MustNewConstMetric(descBytesIn, prometheus.CounterValue, float64(st.in.Load()), st.method, st.path)
		ch <- prometheus.MustNewConstMetric(descBytesOut, prometheus.CounterValue, float64(st.out.Load()), st.method, st.path)
		st.latency.Collect(ch)
	}
	c.s.reg.each(func(name string, sb *core.Sandbox) {
		j := sb.Journal()
		for origin, byType := range j.Counts() {
			for typ, n := range byType {
				ch <- prometheus.MustNewConstMetric(descEvents, prometheus.CounterValue, float64(n), name, string(origin), string(typ))
			}
		}
		ch <- prometheus.MustNewConstMetric(descWatchers, prometheus.GaugeValue, float64(len(j.Watchers())), name)
		ch <- prometheus.MustNewConstMetric(descDropped, prometheus.CounterValue, float64(j.Dropped()), name)
		ch <- prometheus.MustNewConstMetric(descOverflows, prometheus.CounterValue, float64(j.Overflows()), name)
		full, failing := sb.StateFull(), sb.HistoryTrouble() != ""
		ch <- prometheus.MustNewConstMetric(descHistory, prometheus.GaugeValue, gauge(full), name, "state_full")
		ch <- prometheus.MustNewConstMetric(descHistory, prometheus.GaugeValue, gauge(failing && !full), name, "error")
		c.collectEvents(ch, name)
		c.collectReplication(ch, name)
		collectQuota(ch, name, sb)
		if c.s.mirrorURing != nil {
			if n, on := c.s.mirrorURing(name); on {
				ch <- prometheus.MustNewConstMetric(descURing, prometheus.CounterValue, float64(n), name)
			}
		}
		if c.s.mirrorOps == nil {
			return
		}
		for op, n := range c.s.mirrorOps(name) {
			ch <- prometheus.MustNewConstMetric(descFUSE, prometheus.CounterValue, float64(n), name, op)
		}
	})
}

// metricsHandler serves the registry of the Server's collector plus the Go
// runtime's and the process's own figures.
func (s *Server) newMetricsHandler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s}, prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// metrics answers GET /metrics.
func (s *Server) metrics(w http.ResponseWriter, r *http.Request, _ httprouter.Params) error {
	s.metricsHandler.ServeHTTP(w, r)
	return nil
}

// gauge is a condition's value: 1 while it holds.
func gauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
