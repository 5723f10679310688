// Package metrics exports a real run's measurements while it runs, in
// Prometheus' text format: every request counted and timed per strategy
// and instance, which strategy is under way, its requests in flight and
// its target rate (lbchaos run --metrics-listen).
//
// An Exporter lives for the whole run; the engine opens a Strategy on it
// for each strategy it measures (Begin) and feeds it every request's
// outcome (Strategy.Add) from its result loop. Add is two atomic additions
// on counters resolved once per strategy and instance, with no label
// lookup, lock or allocation; the series are built from the counters at
// each scrape, as the proxy's own metrics are (harness/proxies/lbproxy).
package metrics

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Outcome is how a request ended, as the run's summary counts it: its
// success ratio is OK's share, its timeout ratio Timeout's, its error
// ratio Error's and Timeout's together.
type Outcome uint8

const (
	OK      Outcome = iota // a 2xx answer
	Error                  // anything else but a timeout: non-2xx, reset, refused, no instance allowed
	Timeout                // ended by the client's timeout
	outcomes
)

// String is the outcome's label value.
func (o Outcome) String() string {
	switch o {
	case OK:
		return "ok"
	case Error:
		return "error"
	case Timeout:
		return "timeout"
	}
	return "outcome(" + strconv.Itoa(int(o)) + ")"
}

// NoInstance is the instance label of requests that reached no instance
// (the strategy allowed none).
const NoInstance = "none"

// The metrics' names.
const (
	RequestsName        = "lbchaos_requests_total"
	DurationName        = "lbchaos_request_duration_seconds"
	StrategyRunningName = "lbchaos_strategy_running"
	InFlightName        = "lbchaos_inflight"
	RateTargetName      = "lbchaos_rate_target"
)

var (
	requestsDesc = prometheus.NewDesc(RequestsName,
		"Requests measured, by the instance they went to ("+NoInstance+": none) and how they ended (ok, error, timeout).",
		[]string{"experiment", "strategy", "instance", "outcome"}, nil)
	durationDesc = prometheus.NewDesc(DurationName,
		"Latency of every request measured, failed ones included (a timeout counts as its timeout), by the instance it went to.",
		[]string{"experiment", "strategy", "instance"}, nil)
	runningDesc = prometheus.NewDesc(StrategyRunningName,
		"1 while the strategy is being measured, else 0; the run measures its strategies one at a time.",
		[]string{"experiment", "strategy"}, nil)
	inFlightDesc = prometheus.NewDesc(InFlightName,
		"Requests of the strategy under way, sent and not yet ended; only while a strategy runs.",
		[]string{"experiment", "strategy"}, nil)
	rateTargetDesc = prometheus.NewDesc(RateTargetName,
		"The arrival schedule's rate now, in requests per second (0 once the attack's duration is over); only while a strategy runs.",
		[]string{"experiment", "strategy"}, nil)
)

// Exporter holds a run's metrics. Its methods are safe for concurrent
// use; its Handler serves them.
type Exporter struct {
	// Immutable after NewExporter.
	reg    *prometheus.Registry
	bounds []time.Duration // the histograms' upper bounds
	upper  []float64       // the same, in seconds

	// current is the strategy under way, nil between strategies.
	current atomic.Pointer[Strategy]

	mu sync.Mutex
	// names are the strategies known, in the order first told; counts
	// holds those begun, by experiment and strategy. Counts are kept for
	// the whole run, so that counters never go back.
	names  []runName
	counts map[runName]*Strategy
}

type runName struct{ experiment, strategy string }

// NewExporter returns an exporter whose latency histograms have Buckets(timeout).
func NewExporter(timeout time.Duration) *Exporter {
	e := &Exporter{reg: prometheus.NewRegistry(), bounds: bounds(timeout), upper: Buckets(timeout), counts: map[runName]*Strategy{}}
	e.reg.MustRegister(collector{e})
	return e
}

// Handler serves the metrics in Prometheus' text format.
func (e *Exporter) Handler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{})
}

// Buckets are the latency histograms' upper bounds in seconds: ten a
// decade (1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6 and 8 times a power of ten),
// neighbours at most a third apart, from 1 ms up to below timeout, then
// timeout itself, so that a timed-out request lands in the last finite
// bucket or just above it. With 30 s, 46 buckets.
func Buckets(timeout time.Duration) []float64 {
	var b []float64
	for _, d := range bounds(timeout) {
		b = append(b, d.Seconds())
	}
	return b
}

// bounds are Buckets as durations, computed in whole microseconds so that
// each prints as the round number it is.
func bounds(timeout time.Duration) []time.Duration {
	var b []time.Duration
	for decade := time.Duration(1); ; decade *= 10 {
		for _, us := range []time.Duration{1000, 1250, 1500, 2000, 2500, 3000, 4000, 5000, 6000, 8000} {
			v := us * decade * time.Microsecond
			if v >= timeout {
				return append(b, timeout)
			}
			b = append(b, v)
		}
	}
}

// Live is where the gauges of a strategy under way are read at each
// scrape; a nil func leaves its gauge out.
type Live struct {
	InFlight   func() int64
	RateTarget func() float64
}

// Run names a strategy of a run.
type Run struct {
	Experiment string
	Strategy   string
	// Strategies are every strategy the run measures: their
	// lbchaos_strategy_running is 0 from the first Begin, so that a
	// dashboard lists them before they run.
	Strategies []string
	// Instances is the number of instances, ids 0 to Instances-1.
	Instances int
}

// Strategy counts the requests of one strategy.
type Strategy struct {
	// Immutable after Begin.
	e    *Exporter
	run  Run
	live Live
	// inst[i+1] counts instance i's requests, inst[0] those that reached
	// no instance.
	inst []instCounts
}

// instCounts are one instance's requests, by outcome and latency bucket
// (the last one past every bound), and their latencies' sum. Counting by
// outcome and bucket at once makes a request one addition, and a scrape
// whose histogram count is the sum of its outcome counters.
type instCounts struct {
	n     [outcomes][]atomic.Uint64
	sumNs atomic.Int64
}

// Begin marks r's strategy running (and any other of the exporter's
// stopped) and returns what counts its requests. A strategy begun again
// (the same experiment and strategy) counts on from where it stopped.
func (e *Exporter) Begin(r Run, live Live) *Strategy {
	e.mu.Lock()
	for _, name := range append(slices.Clone(r.Strategies), r.Strategy) {
		if k := (runName{r.Experiment, name}); !slices.Contains(e.names, k) {
			e.names = append(e.names, k)
		}
	}
	k := runName{r.Experiment, r.Strategy}
	s := &Strategy{e: e, run: r, live: live, inst: make([]instCounts, r.Instances+1)}
	if prev := e.counts[k]; prev != nil && len(prev.inst) == len(s.inst) {
		s.inst = prev.inst
	} else {
		for i := range s.inst {
			for o := range s.inst[i].n {
				s.inst[i].n[o] = make([]atomic.Uint64, len(e.bounds)+1)
			}
		}
	}
	e.counts[k] = s
	e.mu.Unlock()
	e.current.Store(s)
	return s
}

// Add counts n requests to instance (-1, or any id out of range: none)
// that ended as o after latency. It is safe for concurrent use, and
// neither locks nor allocates.
func (s *Strategy) Add(instance int, o Outcome, latency time.Duration, n int64) {
	i := instance + 1
	if i < 0 || i >= len(s.inst) {
		i = 0
	}
	if o >= outcomes {
		o = Error
	}
	// The first bound not below latency; past them all: +Inf's.
	bounds := s.e.bounds
	lo, hi := 0, len(bounds)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if latency > bounds[m] {
			lo = m + 1
		} else {
			hi = m
		}
	}
	c := &s.inst[i]
	c.n[o][lo].Add(uint64(n))
	c.sumNs.Add(int64(latency) * n)
}

// End marks the strategy over: it is no longer running, and its gauges
// leave the exporter. Its counters stay, for the rest of the run.
func (s *Strategy) End() { s.e.current.CompareAndSwap(s, nil) }

// collector builds the exporter's series from its counters at each scrape.
type collector struct{ e *Exporter }

var _ prometheus.Collector = collector{}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{requestsDesc, durationDesc, runningDesc, inFlightDesc, rateTargetDesc} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	cur := e.current.Load()
	e.mu.Lock()
	names := slices.Clone(e.names)
	var begun []*Strategy
	for _, k := range names {
		if s := e.counts[k]; s != nil {
			begun = append(begun, s)
		}
	}
	e.mu.Unlock()
	for _, k := range names {
		running := 0.0
		if cur != nil && cur.run.Experiment == k.experiment && cur.run.Strategy == k.strategy {
			running = 1
		}
		ch <- prometheus.MustNewConstMetric(runningDesc, prometheus.GaugeValue, running, k.experiment, k.strategy)
	}
	for _, s := range begun {
		s.collect(ch)
	}
	if cur == nil {
		return
	}
	if f := cur.live.InFlight; f != nil {
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(f()), cur.run.Experiment, cur.run.Strategy)
	}
	if f := cur.live.RateTarget; f != nil {
		ch <- prometheus.MustNewConstMetric(rateTargetDesc, prometheus.GaugeValue, f(), cur.run.Experiment, cur.run.Strategy)
	}
}

// collect sends s's counters and histograms, per instance; requests that
// reached no instance only when there are some.
func (s *Strategy) collect(ch chan<- prometheus.Metric) {
	exp, name, upper := s.run.Experiment, s.run.Strategy, s.e.upper
	for i := range s.inst {
		c := &s.inst[i]
		label := NoInstance
		if i > 0 {
			label = strconv.Itoa(i - 1)
		}
		perBucket := make([]uint64, len(upper)+1)
		var byOutcome [outcomes]uint64
		for o := range outcomes {
			for b := range c.n[o] {
				v := c.n[o][b].Load()
				perBucket[b] += v
				byOutcome[o] += v
			}
		}
		total := byOutcome[OK] + byOutcome[Error] + byOutcome[Timeout]
		if i == 0 && total == 0 {
			continue
		}
		for o := range outcomes {
			ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(byOutcome[o]), exp, name, label, o.String())
		}
		cumulative := make(map[float64]uint64, len(upper))
		var below uint64
		for b, u := range upper {
			below += perBucket[b]
			cumulative[u] = below
		}
		sum := time.Duration(c.sumNs.Load()).Seconds()
		ch <- prometheus.MustNewConstHistogram(durationDesc, total, sum, cumulative, exp, name, label)
	}
}
