package lbproxy

import (
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// MetricsPath is answered by the proxy itself with its metrics in the
// Prometheus text format: the figures of /_lbchaos/stats, and a latency
// histogram per backend. Requests for it are not forwarded.
const MetricsPath = "/metrics"

// The metrics /_lbchaos/stats also shows, read from the proxy's counters
// at each scrape.
var (
	requestsDesc = prometheus.NewDesc("lbchaos_proxy_requests_total",
		"Requests the proxy sent to the backend.", []string{"backend", "url"}, nil)
	errorsDesc = prometheus.NewDesc("lbchaos_proxy_errors_total",
		"Requests to the backend that failed: a 5xx answer, the backend unreachable or its answer cut short, or the client gone.", []string{"backend", "url"}, nil)
	inFlightDesc = prometheus.NewDesc("lbchaos_proxy_in_flight",
		"Requests to the backend in progress, as the strategy counts them.", []string{"backend", "url"}, nil)
	ejectedDesc = prometheus.NewDesc("lbchaos_proxy_ejected",
		"1 while the strategy has the backend ejected, else 0.", []string{"backend", "url"}, nil)
	ejectionsDesc = prometheus.NewDesc("lbchaos_proxy_ejections_total",
		"Ejections of any backend by the strategy.", nil, nil)
	infoDesc = prometheus.NewDesc("lbchaos_proxy_info",
		"The strategy the proxy balances with; always 1.", []string{"strategy"}, nil)
)

// statsCollector exports the proxy's stats to Prometheus.
type statsCollector struct{ p *Server }

var _ prometheus.Collector = statsCollector{}

func (c statsCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{requestsDesc, errorsDesc, inFlightDesc, ejectedDesc, ejectionsDesc, infoDesc} {
		ch <- d
	}
}

func (c statsCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.stats()
	ch <- prometheus.MustNewConstMetric(infoDesc, prometheus.GaugeValue, 1, s.Strategy)
	ch <- prometheus.MustNewConstMetric(ejectionsDesc, prometheus.CounterValue, float64(s.Ejections))
	for _, b := range s.Backends {
		id := strconv.Itoa(b.ID)
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(b.Requests), id, b.URL)
		ch <- prometheus.MustNewConstMetric(errorsDesc, prometheus.CounterValue, float64(b.Errors), id, b.URL)
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(b.InFlight), id, b.URL)
		ejected := 0.0
		if b.Ejected {
			ejected = 1
		}
		ch <- prometheus.MustNewConstMetric(ejectedDesc, prometheus.GaugeValue, ejected, id, b.URL)
	}
}

// newMetrics registers the proxy's metrics, the Go runtime's and the
// process's in a registry of p's own, and returns its handler and the
// latency histogram of each backend.
func newMetrics(p *Server) (http.Handler, []prometheus.Observer) {
	reg := prometheus.NewRegistry()
	latency := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "lbchaos_proxy_request_duration_seconds",
		Help: "Time from a request's arrival at the proxy to the end of its answer, by the backend that served it.",
		// 1 ms to about 33 s.
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 16),
	}, []string{"backend", "url"})
	reg.MustRegister(statsCollector{p}, latency,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	obs := make([]prometheus.Observer, len(p.cfg.Backends))
	for id, u := range p.cfg.Backends {
		obs[id] = latency.WithLabelValues(strconv.Itoa(id), u.String())
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), obs
}
