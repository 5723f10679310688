package reports

import (
	"cmp"
	"math"
	"slices"
	"strconv"
)

// DefaultKeyMetric is the key metric of an experiment that names none.
const DefaultKeyMetric = "bad_ratio"

// Kind is what a metric's number measures. It fixes the unit the number is
// shown in, how it is written and how a difference between two values is
// stated, so that nothing needs to guess it from the metric's name.
type Kind int

const (
	// KindRatio is a fraction in [0, 1] (of requests, of time); shown in
	// percent, differences in percentage points.
	KindRatio Kind = iota + 1
	// KindMilliseconds is a latency in milliseconds.
	KindMilliseconds
	// KindSeconds is a duration in seconds.
	KindSeconds
	// KindCount is a whole number of things (requests, ejections).
	KindCount
	// KindRate is a number of requests per second.
	KindRate
	// KindFactor is a dimensionless multiple, e.g. a load over the mean.
	KindFactor
)

var kindNames = map[Kind]string{
	KindRatio: "ratio", KindMilliseconds: "milliseconds", KindSeconds: "seconds",
	KindCount: "count", KindRate: "rate", KindFactor: "factor",
}

// String is the kind's lower-case name, e.g. "ratio".
func (k Kind) String() string {
	if n, ok := kindNames[k]; ok {
		return n
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Unit is the unit a value of the kind is shown in: "%" for ratios, "ms",
// "s", "req/s", "×", and "" for counts.
func (k Kind) Unit() string {
	switch k {
	case KindRatio:
		return "%"
	case KindMilliseconds:
		return "ms"
	case KindSeconds:
		return "s"
	case KindRate:
		return "req/s"
	case KindFactor:
		return "×"
	}
	return ""
}

// Direction says which way a metric's value is better.
type Direction int

const (
	LowerIsBetter Direction = iota + 1
	HigherIsBetter
	// Neutral metrics describe the run rather than grade it (requests
	// sent, ejections, utilization).
	Neutral
)

// String is "lower is better", "higher is better" or "neutral".
func (d Direction) String() string {
	switch d {
	case LowerIsBetter:
		return "lower is better"
	case HigherIsBetter:
		return "higher is better"
	case Neutral:
		return "neutral"
	}
	return "Direction(" + strconv.Itoa(int(d)) + ")"
}

// Metric is one number of a Strategy that experiment files, reports and
// comparisons refer to by name. Every metric is declared once, in
// metricTable; LookupMetric and MetricTable return copies.
type Metric struct {
	// Name is the metric as experiment files write it in expect and
	// key_metric, e.g. "error_ratio" or "p99_ms".
	Name string
	Kind Kind
	// Label is a noun phrase for prose, e.g. "failed requests".
	Label string
	// Head is the heading of a table column of the metric, in the unit of
	// Text, e.g. "error %".
	Head string
	// Better says which way a value is better.
	Better Direction
	// Key is true when the metric may be an experiment's key_metric; every
	// key metric is LowerIsBetter.
	Key bool
	// Reading says how to read the metric, in one sentence. Where it says
	// "the slow threshold", a report names the run's threshold instead.
	Reading string

	value func(*Strategy) float64
	// measured reports whether st has the metric in a run of s; nil means
	// whenever the value is not NaN.
	measured func(s *Summary, st *Strategy) bool
	// na is a table cell's text where the metric was not measured; "—"
	// when "".
	na string
	// thresholdInHead marks a metric whose column heading should name the
	// run's slow threshold.
	thresholdInHead bool
	// unobservable marks a metric some runs cannot measure at all (not a
	// failure of the strategy): an expectation on it is then missing, not
	// failed (see Unobserved).
	unobservable bool
}

// metricTable is every metric, once. Key metrics keep the order KeyMetrics
// returns, the default first.
var metricTable = []Metric{
	{Name: "bad_ratio", Kind: KindRatio, Label: "bad requests (failed or slow)", Head: "bad %", Better: LowerIsBetter, Key: true,
		Reading: "The share of requests that failed or were slower than the slow threshold, computed as error % + slow % − timeout % " +
			"(a timeout is both an error and slow; a slow failure that did not time out is counted twice, so this is an upper bound).",
		value: badRatio},
	{Name: "error_ratio", Kind: KindRatio, Label: "failed requests", Head: "error %", Better: LowerIsBetter, Key: true,
		Reading: "The share of requests without a 2xx response (error statuses, timeouts, resets, refused connections).",
		value:   func(st *Strategy) float64 { return st.ErrorRatio }},
	{Name: "slow_ratio", Kind: KindRatio, Label: "slow requests", Head: "slow %", Better: LowerIsBetter, Key: true,
		Reading:         "The share of requests slower than the slow threshold, timeouts included.",
		value:           func(st *Strategy) float64 { return st.SlowRatio },
		thresholdInHead: true},
	{Name: "timeout_ratio", Kind: KindRatio, Label: "timed-out requests", Head: "timeout %", Better: LowerIsBetter, Key: true,
		Reading: "The share of requests that hit the client timeout.",
		value:   func(st *Strategy) float64 { return st.TimeoutRatio }},
	{Name: "faulty_share", Kind: KindRatio, Label: "share of requests sent to faulty instances", Head: "faulty share %", Better: LowerIsBetter, Key: true,
		Reading:  "The share of requests sent to the faulty instances (of attempts, under a retry or hedge policy); compare it with their fair share.",
		value:    func(st *Strategy) float64 { return st.FaultyShare },
		measured: func(s *Summary, _ *Strategy) bool { return len(s.FaultyInstances) > 0 }},
	{Name: "success_ratio", Kind: KindRatio, Label: "successful requests", Head: "success %", Better: HigherIsBetter,
		Reading: "The share of requests with a 2xx response.",
		value:   func(st *Strategy) float64 { return st.SuccessRatio }},

	{Name: "mean_ms", Kind: KindMilliseconds, Label: "mean latency", Head: "mean ms", Better: LowerIsBetter,
		Reading: "The mean latency of all requests, failed ones included.",
		value:   func(st *Strategy) float64 { return st.LatencyMs.Mean }},
	{Name: "p50_ms", Kind: KindMilliseconds, Label: "median latency", Head: "p50 ms", Better: LowerIsBetter,
		Reading: "The latency half of the requests stayed within, failed ones included; the typical request, hiding the tail.",
		value:   func(st *Strategy) float64 { return st.LatencyMs.P50 }},
	{Name: "p90_ms", Kind: KindMilliseconds, Label: "p90 latency", Head: "p90 ms", Better: LowerIsBetter,
		Reading: "The latency 90% of requests stayed within, failed ones included.",
		value:   func(st *Strategy) float64 { return st.LatencyMs.P90 }},
	{Name: "p99_ms", Kind: KindMilliseconds, Label: "p99 latency", Head: "p99 ms", Better: LowerIsBetter, Key: true,
		Reading: "The latency 99% of requests stayed within, failed ones included.",
		value:   func(st *Strategy) float64 { return st.LatencyMs.P99 }},
	{Name: "p999_ms", Kind: KindMilliseconds, Label: "p99.9 latency", Head: "p99.9 ms", Better: LowerIsBetter, Key: true,
		Reading: "The latency 99.9% of requests stayed within, failed ones included.",
		value:   func(st *Strategy) float64 { return st.LatencyMs.P999 }},
	{Name: "p50_ok_ms", Kind: KindMilliseconds, Label: "median latency of successful requests", Head: "p50 ok ms", Better: LowerIsBetter,
		Reading: "The latency half of the successful (2xx) requests stayed within; a fault that fails fast cannot pull it down.",
		value: func(st *Strategy) float64 {
			return okLatency(st.LatencyOkMs, func(l *Latency) float64 { return l.P50 })
		},
		measured: func(_ *Summary, st *Strategy) bool { return st.LatencyOkMs != nil }},
	{Name: "p99_ok_ms", Kind: KindMilliseconds, Label: "p99 latency of successful requests", Head: "p99 ok ms", Better: LowerIsBetter,
		Reading: "The latency 99% of the successful (2xx) requests stayed within; a fault that fails fast cannot pull it down.",
		value: func(st *Strategy) float64 {
			return okLatency(st.LatencyOkMs, func(l *Latency) float64 { return l.P99 })
		},
		measured: func(_ *Summary, st *Strategy) bool { return st.LatencyOkMs != nil }},
	{Name: "p99_failed_ms", Kind: KindMilliseconds, Label: "p99 latency of failed requests", Head: "p99 failed ms", Better: Neutral,
		Reading: "The latency 99% of the failed requests stayed within (a timeout counts as its timeout): how long a user waited to learn of a failure.",
		value: func(st *Strategy) float64 {
			return okLatency(st.LatencyFailedMs, func(l *Latency) float64 { return l.P99 })
		},
		measured: func(_ *Summary, st *Strategy) bool { return st.LatencyFailedMs != nil }},
	{Name: "max_ms", Kind: KindMilliseconds, Label: "maximum latency", Head: "max ms", Better: LowerIsBetter,
		Reading: "The slowest request's latency; a timeout counts as its timeout.",
		value:   func(st *Strategy) float64 { return st.LatencyMs.Max }},

	{Name: "max_avg_load", Kind: KindFactor, Label: "busiest instance's load over the average", Head: "max/avg load", Better: LowerIsBetter, Key: true,
		Reading:  "The busiest instance's requests over the mean per instance (1 = even).",
		value:    func(st *Strategy) float64 { return st.MaxAvgLoad },
		measured: derived},
	{Name: "max_jump_rps", Kind: KindRate, Label: "largest one-second jump of an instance's traffic", Head: "max 1 s jump req/s", Better: LowerIsBetter, Key: true,
		Reading:  "The largest change of any instance's request rate from one second to the next.",
		value:    func(st *Strategy) float64 { return st.MaxJumpRps },
		measured: derived},
	{Name: "share_stddev", Kind: KindRatio, Label: "per-second variation of the instances' shares (std. dev.)", Head: "share std dev %", Better: LowerIsBetter, Key: true,
		Reading:  "The mean over instances of the standard deviation of each one's per-second share of requests.",
		value:    func(st *Strategy) float64 { return st.ShareStddev },
		measured: derived},
	{Name: "error_tail_s", Kind: KindSeconds, Label: "time errors lasted past the fault", Head: "errors past fault s", Better: LowerIsBetter, Key: true,
		Reading: "How long errors (over 1% of a second's requests) went on after the last fault ended.",
		value:   func(st *Strategy) float64 { return orNaN(st.ErrorTailS) }},
	{Name: "affinity", Kind: KindRatio, Label: "requests served by their key's home instance", Head: "affinity %", Better: HigherIsBetter,
		Reading: "The share of keyed requests served by their key's home instance (the one that served the key most).",
		value:   func(st *Strategy) float64 { return orNaN(st.Affinity) }},
	{Name: "cross_zone_share", Kind: KindRatio, Label: "requests that crossed zones", Head: "cross-zone %", Better: LowerIsBetter, Key: true,
		Reading: "The share of requests that went to an instance of another zone than their client's, each paying the cross-zone latency (runs with zones).",
		value:   func(st *Strategy) float64 { return orNaN(st.CrossZoneShare) }},
	{Name: "worst_zone_error_ratio", Kind: KindRatio, Label: "failed requests of the worst-off zone's clients", Head: "worst zone error %", Better: LowerIsBetter, Key: true,
		Reading: "The highest share of failed requests among the zones' clients (runs with zones): a failure kept in its zone shows here, one spread over the zones in error %.",
		value:   worstZoneErrorRatio},
	{Name: "newcomer_share", Kind: KindRatio, Label: "share of requests sent to instances that joined during the run", Head: "newcomer share %", Better: Neutral,
		Reading: "The share of requests sent to the instances that joined the host set during the run; compare it with their fair share for the time since they joined.",
		value:   newcomerShare},
	{Name: "max_utilization", Kind: KindRatio, Label: "busiest instance's utilization", Head: "max utilization %", Better: Neutral,
		Reading: "The busiest instance's share of worker time spent serving.",
		value:   maxUtilization},

	{Name: "requests", Kind: KindCount, Label: "requests sent", Head: "requests", Better: Neutral,
		Reading: "The number of requests sent, answered or not.",
		value:   func(st *Strategy) float64 { return float64(st.Requests) }},
	{Name: "achieved_rate", Kind: KindRate, Label: "achieved rate", Head: "achieved rate req/s", Better: HigherIsBetter,
		Reading: "Requests sent per second; below the target rate the load generator fell behind.",
		value:   func(st *Strategy) float64 { return st.AchievedRate }},
	{Name: "attempts_per_request", Kind: KindFactor, Label: "attempts per request", Head: "attempts/req", Better: LowerIsBetter,
		Reading: "The mean number of attempts a client request made: 1 without retries or hedging; above it, the extra load the policy put on the instances.",
		value: func(st *Strategy) float64 {
			if st.AttemptsPerRequest == nil {
				return math.NaN()
			}
			return st.AttemptsPerRequest.Mean
		},
		measured: func(_ *Summary, st *Strategy) bool { return st.AttemptsPerRequest != nil }},
	{Name: "end_goodput_ratio", Kind: KindRatio, Label: "goodput at the end of the run", Head: "end goodput %", Better: HigherIsBetter,
		Reading: "The share of the requests sent in the run's last 10 s (its last third, if shorter) answered 2xx within their deadline: " +
			"near 100% when the system recovered from a fault, near 0 when it stayed down after the trigger ended (a metastable failure).",
		value:    endGoodput,
		measured: func(_ *Summary, st *Strategy) bool { return st.ErrorTailS != nil && !math.IsNaN(endGoodput(st)) }},
	{Name: "duplicate_executions", Kind: KindCount, Label: "requests executed more than once", Head: "duplicates", Better: LowerIsBetter,
		Reading: "The requests the instances executed more than once: retries of a request an instance had already read (it hung, reset or failed after reading it); " +
			"counted by lbchaos's own instances in the real engine, absent otherwise.",
		value: func(st *Strategy) float64 {
			if st.DuplicateExecutions == nil {
				return math.NaN()
			}
			return float64(*st.DuplicateExecutions)
		},
		unobservable: true},
	{Name: "tier_amplification", Kind: KindFactor, Label: "requests at the last tier per client request", Head: "last tier req/req", Better: LowerIsBetter,
		Reading: "In a tiered experiment, the requests the last tier received per client request (tiers[].per_client_request): 1 without retries, " +
			"the product of every hop's attempts when every tier retries a failure.",
		value: func(st *Strategy) float64 {
			if len(st.Tiers) == 0 {
				return math.NaN()
			}
			return st.Tiers[len(st.Tiers)-1].PerClientRequest
		},
		unobservable: true},
	{Name: "ejections", Kind: KindCount, Label: "ejections", Head: "ejections", Better: Neutral,
		Reading:  "The times an instance was taken out of traffic (0 for a strategy that does not eject; n/a for a proxy, whose ejections are not observed).",
		value:    func(st *Strategy) float64 { return float64(st.Ejections) },
		measured: func(_ *Summary, st *Strategy) bool { return st.EjectionsSeen() },
		na:       "n/a"},
}

// metricIndex maps a metric's name to its row of metricTable.
var metricIndex = func() map[string]int {
	idx := make(map[string]int, len(metricTable))
	for i, m := range metricTable {
		if _, dup := idx[m.Name]; dup {
			panic("reports: metric " + m.Name + " declared twice")
		}
		idx[m.Name] = i
	}
	return idx
}()

// LookupMetric returns the metric of that name, and false for a name no
// metric has.
func LookupMetric(name string) (Metric, bool) {
	i, ok := metricIndex[name]
	if !ok {
		return Metric{}, false
	}
	return metricTable[i], true
}

// MetricTable returns every metric, key metrics in the order of KeyMetrics.
// The slice is the caller's.
func MetricTable() []Metric {
	return slices.Clone(metricTable)
}

// mustMetrics returns the named metrics; a name without one is a bug here.
func mustMetrics(names []string) []Metric {
	out := make([]Metric, len(names))
	for i, name := range names {
		m, ok := LookupMetric(name)
		if !ok {
			panic("reports: no metric " + name)
		}
		out[i] = m
	}
	return out
}

// Metrics returns the names of every metric, sorted.
func Metrics() []string {
	names := make([]string, len(metricTable))
	for i, m := range metricTable {
		names[i] = m.Name
	}
	slices.Sort(names)
	return names
}

// KeyMetrics returns the names of the metrics a Summary's KeyMetric may
// take, the default first. Lower is better for each.
func KeyMetrics() []string {
	var out []string
	for _, m := range metricTable {
		if m.Key {
			out = append(out, m.Name)
		}
	}
	return out
}

// Value returns st's value of the named metric (one of Metrics), and false
// for a name it does not know. A metric the run did not measure is NaN.
func Value(st *Strategy, name string) (float64, bool) {
	m, ok := LookupMetric(name)
	if !ok {
		return math.NaN(), false
	}
	return m.Value(st), true
}

// MetricValue returns st's value of the named key metric (one of
// KeyMetrics; "" means DefaultKeyMetric), and false for a name that is not
// a key metric.
func MetricValue(st *Strategy, name string) (float64, bool) {
	if name == "" {
		name = DefaultKeyMetric
	}
	if m, ok := LookupMetric(name); ok && m.Key {
		return m.Value(st), true
	}
	return math.NaN(), false
}

// Value is st's value of the metric; NaN when the run did not measure it.
func (m Metric) Value(st *Strategy) float64 { return m.value(st) }

// Unit is the unit Text writes a value in; see Kind.Unit.
func (m Metric) Unit() string { return m.Kind.Unit() }

// Text writes a value for a table cell, in the metric's unit without the
// unit: ratios in percent with two decimals ("<0.01" for tiny non-zero
// ones), latencies with the precision their size needs, factors with two
// decimals, other numbers without needless decimals. NaN, a value the run
// did not measure, is "—".
func (m Metric) Text(v float64) string {
	switch {
	case math.IsNaN(v):
		return "—"
	case math.IsInf(v, 0):
		return "n/a"
	}
	switch m.Kind {
	case KindRatio:
		return fmtPct(v)
	case KindMilliseconds:
		return fmtMs(v)
	case KindFactor:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
	return fmtNum(v)
}

// Format writes a value with its unit, e.g. "45.01%", "11.3 ms", "6".
func (m Metric) Format(v float64) string {
	t := m.Text(v)
	switch u := m.Unit(); {
	case !finite(v) || u == "":
		return t
	case u == "%":
		return t + u
	default:
		return t + " " + u
	}
}

// measuredIn reports whether st has the metric in a run of s.
func (m Metric) measuredIn(s *Summary, st *Strategy) bool {
	if m.measured != nil {
		return m.measured(s, st)
	}
	return !math.IsNaN(m.Value(st))
}

// textIn is st's value of m for a table cell of a run of s; "—" when the
// run did not measure it.
func textIn(m Metric, s *Summary, st *Strategy) string {
	if !m.measuredIn(s, st) {
		return cmp.Or(m.na, "—")
	}
	return m.Text(m.Value(st))
}

// derived reports whether Derive filled in st's scenario metrics: it had
// requests on its instances.
func derived(_ *Summary, st *Strategy) bool { return st.MaxAvgLoad > 0 }

// endGoodput is the goodput over the offered requests in the run's last
// 10 seconds (or its last third, if shorter); NaN without those series.
func endGoodput(st *Strategy) float64 {
	tl := st.Timeline
	if tl == nil || len(tl.Offered) == 0 || len(tl.Goodput) != len(tl.Offered) || !(tl.BucketS > 0) {
		return math.NaN()
	}
	k := min(int(math.Round(10/tl.BucketS)), len(tl.Offered)/3)
	k = max(k, 1)
	var offered, good int64
	for b := len(tl.Offered) - k; b < len(tl.Offered); b++ {
		offered += tl.Offered[b]
		good += tl.Goodput[b]
	}
	if offered == 0 {
		return math.NaN()
	}
	return float64(good) / float64(offered)
}

// orNaN is *p, or NaN when p is nil (a metric the run did not measure).
func orNaN(p *float64) float64 {
	if p == nil {
		return math.NaN()
	}
	return *p
}

// badRatio is the share of requests that failed or were slow, computed from
// the strategy's ratios: error_ratio + slow_ratio − timeout_ratio, since a
// timeout is both an error and slow. A request that failed slowly without
// timing out is counted twice, so the sum is an upper bound; it is clamped
// to [max(error_ratio, slow_ratio), 1], between which the true share lies.
func badRatio(st *Strategy) float64 {
	lo := math.Max(st.ErrorRatio, st.SlowRatio)
	v := st.ErrorRatio + st.SlowRatio - st.TimeoutRatio
	return math.Max(lo, math.Min(1, v))
}

// maxUtilization is the largest utilization of st's instances; NaN when
// none was measured.
func maxUtilization(st *Strategy) float64 {
	u := math.NaN()
	for _, in := range st.Instances {
		if in.Utilization != nil && !(*in.Utilization <= u) {
			u = *in.Utilization
		}
	}
	return u
}

// okLatency is f of l, or NaN when l is absent (no such requests).
func okLatency(l *Latency, f func(*Latency) float64) float64 {
	if l == nil {
		return math.NaN()
	}
	return f(l)
}

// worstZoneErrorRatio is the highest error ratio of a zone's clients; NaN
// without zones.
func worstZoneErrorRatio(st *Strategy) float64 {
	worst := math.NaN()
	for _, z := range st.Zones {
		if z.Requests > 0 && !(z.ErrorRatio <= worst) {
			worst = z.ErrorRatio
		}
	}
	return worst
}
