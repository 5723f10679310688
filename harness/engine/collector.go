package engine

import (
	"math"
	"sync"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/lbchaos/lbchaos/reports"
)

// Outcome is one measured request as the collector sees it.
type Outcome struct {
	Instance int           // -1 when the request reached no instance
	SentAt   time.Duration // since the start of the attack
	Latency  time.Duration
	Success  bool   // 2xx
	Timeout  bool   // ended by the client's timeout
	Key      uint64 // the request's key, when HasKey
	HasKey   bool
	// Attempts is how many attempts the request made, under a retry or
	// hedge policy (Collector.CountAttempts); ignored otherwise.
	Attempts int32
	// ClientZone is the index of the zone of the client that sent the
	// request (experiments.Experiment.ReplicaZone of its replica), for a
	// collector with zones (SetZones); ignored otherwise.
	ClientZone int32
}

// Collector aggregates results into HdrHistograms: overall, per instance,
// and per instance per second (by the time the request was sent). Memory is
// bounded by the instance count and the request timeout, not by the number
// of requests or the run's length: a second's histograms are reduced to
// their percentiles once every request sent in it must have finished.
type Collector struct {
	// Immutable after construction.
	instances int
	slow      time.Duration
	bucket    time.Duration
	settle    time.Duration // how long after a bucket ends its requests may still finish
	// observe, set before the first Add (Observe), is told every outcome
	// recorded; nil: none is.
	observe func(o Outcome, n int64)

	mu      sync.Mutex
	overall *hdrhistogram.Histogram
	// overallOK and overallFailed split overall by outcome: 2xx or not.
	overallOK, overallFailed *hdrhistogram.Histogram
	lag                      *hdrhistogram.Histogram
	inst                     []instAgg
	series                   []reports.InstanceSeries
	open                     map[int][]*hdrhistogram.PackedHistogram // bucket -> per-instance histograms
	// openOK holds, like open, each bucket's successful requests alone.
	openOK    map[int][]*hdrhistogram.PackedHistogram
	okSeries  bool // a successful request was recorded into openOK
	finalized int  // buckets < finalized are reduced (or emitted)
	// emit, when set, receives each finished bucket's histograms instead
	// of reduce (EmitBuckets).
	emit         func(b int, hists, ok []*hdrhistogram.PackedHistogram)
	late         int64 // results that arrived for an already reduced bucket
	requests     int64
	successes    int64
	timeouts     int64
	slowCount    int64
	unattributed int64
	aborted      int64
	// unrouted counts per bucket the requests that reached no instance;
	// nil until one arrives.
	unrouted []int64
	// keys counts, per request key, the requests to each instance; nil
	// until a keyed request arrives.
	keys map[uint64][]keyCount
	// seconds holds each reduced second's histograms, encoded, for the
	// HdrHistogram log (hdrlog.go).
	seconds secondLog
	// flow counts requests as attempts (attempts.go).
	flow flow
	// zones counts requests by zone (zones.go); nil without zones.
	zones *zoneAgg
}

// keyCount is how many requests with some key went to one instance.
type keyCount struct {
	instance int32
	n        int64
}

// instAgg is one instance's totals. Its histograms start sparse (instHist):
// an instance's latencies often fill few of the 24k buckets of the
// geometry, and a dense histogram per instance (188 KB each, three per
// instance) then costs more to allocate, and to walk for the summary, than
// to fill.
type instAgg struct {
	hist, histOK, histFailed             instHist
	requests, errors, timeouts, slowReqs int64
}

// NewCollector returns a collector for instances over an attack of
// duration, whose requests end by timeout; a request slower than slow
// counts as slow.
func NewCollector(instances int, duration, timeout, slow time.Duration) *Collector {
	buckets := int(math.Ceil(duration.Seconds()))
	c := &Collector{
		instances:     instances,
		slow:          slow,
		bucket:        time.Second,
		settle:        timeout + 2*time.Second,
		overall:       newHist(),
		overallOK:     newHist(),
		overallFailed: newHist(),
		lag:           newHist(),
		inst:          make([]instAgg, instances),
		series:        make([]reports.InstanceSeries, instances),
		open:          map[int][]*hdrhistogram.PackedHistogram{},
		openOK:        map[int][]*hdrhistogram.PackedHistogram{},
		flow:          newFlow(buckets, instances),
	}
	for i := range c.inst {
		c.inst[i] = instAgg{hist: newInstHist(), histOK: newInstHist(), histFailed: newInstHist()}
		c.series[i] = reports.InstanceSeries{
			ID:       i,
			Requests: make([]int64, buckets),
			Errors:   make([]int64, buckets),
			P50Ms:    make([]float64, buckets),
			P99Ms:    make([]float64, buckets),
			P50OkMs:  make([]float64, buckets),
			P99OkMs:  make([]float64, buckets),
		}
	}
	return c
}

// Add records one measured request.
func (c *Collector) Add(o Outcome) { c.AddN(o, 1) }

// Observe makes every outcome recorded (Add, AddN) go to f as well, from
// the goroutine that adds it, before the collector records it. Call it
// before the first Add; f must be safe to call from every goroutine that
// adds.
func (c *Collector) Observe(f func(o Outcome, n int64)) { c.observe = f }

// AddN records n measured requests of the same outcome, as n calls of Add
// would: the collector keeps nothing of a request but its instance, the
// second it was sent in, its latency in histogram units, whether it was
// slow, a success or a timeout, and its key. Between two calls of Sweep (or
// before Finish), the order of Adds does not change what is collected, so
// a caller may gather equal outcomes and add them at once.
func (c *Collector) AddN(o Outcome, n int64) {
	if n <= 0 {
		return
	}
	if c.observe != nil {
		c.observe(o, n)
	}
	us := micros(o.Latency)
	slow := o.Timeout || o.Latency > c.slow
	c.mu.Lock()
	defer c.mu.Unlock()
	c.requests += n
	_ = c.overall.RecordValues(us, n)
	if o.Success {
		c.successes += n
		_ = c.overallOK.RecordValues(us, n)
	} else {
		_ = c.overallFailed.RecordValues(us, n)
	}
	if o.Timeout {
		c.timeouts += n
	}
	if slow {
		c.slowCount += n
	}
	if c.zones != nil {
		c.zones.add(&o, us, n)
	}
	b := c.bucketOf(o.SentAt)
	c.flow.request(b, o, n)
	if o.Instance < 0 || o.Instance >= c.instances {
		c.unattributed += n
		if c.unrouted == nil {
			c.unrouted = make([]int64, len(c.series[0].Requests))
		}
		c.unrouted[b] += n
		return
	}
	if o.HasKey {
		c.countKeyN(o.Key, o.Instance, n)
	}
	if c.flow.perAttempt {
		return // its attempts were recorded at their instances (AddAttempt)
	}
	c.flow.attempt(b, n)
	c.addInstance(o.Instance, b, us, o.Success, o.Timeout, slow, n)
}

// addInstance records n requests (or attempts) to instance i sent in
// bucket b. c.mu held.
func (c *Collector) addInstance(i, b int, us int64, success, timeout, slow bool, n int64) {
	a := &c.inst[i]
	a.requests += n
	a.hist.record(us, n)
	if success {
		a.histOK.record(us, n)
	} else {
		a.errors += n
		a.histFailed.record(us, n)
	}
	if timeout {
		a.timeouts += n
	}
	if slow {
		a.slowReqs += n
	}
	s := &c.series[i]
	s.Requests[b] += n
	if !success {
		s.Errors[b] += n
	}
	if b < c.finalized {
		c.late += n
		return
	}
	hs := c.open[b]
	if hs == nil {
		hs = make([]*hdrhistogram.PackedHistogram, c.instances)
		c.open[b] = hs
	}
	if hs[i] == nil {
		hs[i] = newPacked()
	}
	_ = hs[i].RecordValues(us, n)
	if success {
		ok := c.openOK[b]
		if ok == nil {
			ok = make([]*hdrhistogram.PackedHistogram, c.instances)
			c.openOK[b] = ok
		}
		if ok[i] == nil {
			ok[i] = newPacked()
		}
		_ = ok[i].RecordValues(us, n)
		c.okSeries = true
	}
}

// Buckets is how many one-second buckets the collector keeps.
func (c *Collector) Buckets() int { return len(c.series[0].Requests) }

func (c *Collector) bucketOf(sentAt time.Duration) int {
	b := int(sentAt / c.bucket)
	return min(max(b, 0), len(c.series[0].Requests)-1)
}

// RecordLag records how late a request left relative to its schedule.
func (c *Collector) RecordLag(lag time.Duration) {
	c.mu.Lock()
	_ = c.lag.RecordValue(micros(max(lag, 0)))
	c.mu.Unlock()
}

func (c *Collector) Abort() {
	c.mu.Lock()
	c.aborted++
	c.mu.Unlock()
}

// Sweep reduces the buckets whose requests have all finished by elapsed.
func (c *Collector) Sweep(elapsed time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.finalized < len(c.series[0].Requests) {
		end := time.Duration(c.finalized+1)*c.bucket + c.settle
		if elapsed < end {
			return
		}
		c.close(c.finalized)
		c.finalized++
	}
}

// EmitBuckets makes the collector hand each finished second's histograms,
// indexed by instance (nil where an instance had none, and a nil slice for
// a second without any), of every request (hists) and of the successful
// ones (ok), to emit in bucket order, instead of reducing
// them to percentiles: a generator streams them to the coordinator, which
// merges them (MergeBuckets). emit runs with the collector locked. Call it
// before the first Add.
func (c *Collector) EmitBuckets(emit func(b int, hists, ok []*hdrhistogram.PackedHistogram)) {
	c.mu.Lock()
	c.emit = emit
	c.mu.Unlock()
}

// close finishes bucket b: emits or reduces it. c.mu held.
func (c *Collector) close(b int) {
	if c.emit != nil {
		c.emit(b, c.open[b], c.openOK[b])
		delete(c.open, b)
		delete(c.openOK, b)
		return
	}
	c.reduce(b)
}

// reduce replaces bucket b's histograms by their percentiles. c.mu held.
func (c *Collector) reduce(b int) {
	c.seconds.add(b, c.open[b])
	for i, h := range c.open[b] {
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		c.series[i].P50Ms[b] = ms(h.ValueAtPercentile(50))
		c.series[i].P99Ms[b] = ms(h.ValueAtPercentile(99))
	}
	for i, h := range c.openOK[b] {
		if h == nil || h.TotalCount() == 0 {
			continue
		}
		c.series[i].P50OkMs[b] = ms(h.ValueAtPercentile(50))
		c.series[i].P99OkMs[b] = ms(h.ValueAtPercentile(99))
	}
	delete(c.open, b)
	delete(c.openOK, b)
}

// Finish reduces every remaining bucket; no Add may follow.
func (c *Collector) Finish() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ; c.finalized < len(c.series[0].Requests); c.finalized++ {
		c.close(c.finalized)
	}
}

// Strategy builds the strategy's summary from what was collected.
func (c *Collector) Strategy(name string, faulty []int) reports.Strategy {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := reports.Strategy{
		Name:            name,
		Requests:        c.requests,
		SuccessRatio:    ratio(c.successes, c.requests),
		TimeoutRatio:    ratio(c.timeouts, c.requests),
		SlowRatio:       ratio(c.slowCount, c.requests),
		LatencyMs:       latencyOf(c.overall),
		LatencyOkMs:     latencyPtr(c.overallOK),
		LatencyFailedMs: latencyPtr(c.overallFailed),
		Unattributed:    c.unattributed,
		Instances:       make([]reports.Instance, c.instances),
		Timeline:        &reports.Timeline{BucketS: c.bucket.Seconds(), Instances: c.series, Unrouted: c.unrouted},
	}
	if c.requests > 0 {
		s.ErrorRatio = 1 - s.SuccessRatio
	}
	if !c.okSeries {
		// Not measured (merged from generators) or no success at all.
		for i := range c.series {
			c.series[i].P50OkMs, c.series[i].P99OkMs = nil, nil
		}
	}
	isFaulty := make([]bool, c.instances)
	for _, id := range faulty {
		if id >= 0 && id < c.instances {
			isFaulty[id] = true
		}
	}
	var faultyReqs int64
	for i, a := range c.inst {
		s.Instances[i] = reports.Instance{
			ID:              i,
			Faulty:          isFaulty[i],
			Requests:        a.requests,
			Share:           ratio(a.requests, c.attemptsTotal()),
			Errors:          a.errors,
			ErrorRatio:      ratio(a.errors, a.requests),
			LatencyMs:       latencyOf(a.hist.hist()),
			LatencyOkMs:     latencyPtr(a.histOK.hist()),
			LatencyFailedMs: latencyPtr(a.histFailed.hist()),
			Timeouts:        a.timeouts,
			Slow:            a.slowReqs,
		}
		if isFaulty[i] {
			faultyReqs += a.requests
		}
	}
	s.FaultyShare = ratio(faultyReqs, c.attemptsTotal())
	c.fillFlow(&s)
	if c.zones != nil {
		c.zones.fill(&s, c.inst, c.attemptsTotal())
	}
	s.Affinity = c.affinity()
	s.Percentiles = percentileCurve(c.overall)
	s.PercentilesOK = percentileCurve(c.overallOK)
	s.PercentilesFailed = percentileCurve(c.overallFailed)
	if c.lag.TotalCount() > 0 {
		s.SendLagMs = reports.LagStats{
			P50: ms(c.lag.ValueAtPercentile(50)),
			P99: ms(c.lag.ValueAtPercentile(99)),
			Max: ms(c.lag.Max()),
		}
	}
	return s
}

// countKeyN counts n requests with key to instance; the lists are short,
// as a key goes to one instance or a few.
func (c *Collector) countKeyN(key uint64, instance int, n int64) {
	if c.keys == nil {
		c.keys = map[uint64][]keyCount{}
	}
	kc := c.keys[key]
	for i := range kc {
		if kc[i].instance == int32(instance) {
			kc[i].n += n
			return
		}
	}
	c.keys[key] = append(kc, keyCount{instance: int32(instance), n: n})
}

// affinity is the share of keyed requests served by their key's home, the
// instance that served that key most often; nil without keyed requests.
func (c *Collector) affinity() *float64 {
	var home, total int64
	for _, kc := range c.keys {
		var most int64
		for _, e := range kc {
			total += e.n
			most = max(most, e.n)
		}
		home += most
	}
	if total == 0 {
		return nil
	}
	a := float64(home) / float64(total)
	return &a
}

// Aborted is how many requests were cancelled by an interrupt and left out.
func (c *Collector) Aborted() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.aborted
}

// Unattributed is how many requests reached no instance.
func (c *Collector) Unattributed() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unattributed
}
