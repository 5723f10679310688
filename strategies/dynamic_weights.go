package strategies

import (
	"math"
	"time"
)

// Defaults of the dynamic-weights strategy.
const (
	DefaultDynamicWeightsInterval  = 5 * time.Second
	DefaultDynamicWeightsSmoothing = 0.5
	DefaultDynamicWeightsMaxRatio  = 10.0
)

func init() {
	registerBase("dynamic-weights", []string{"interval", "smoothing", "max_ratio"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		interval, err := durationParam(params, "interval", DefaultDynamicWeightsInterval)
		if err != nil {
			return nil, err
		}
		alpha, err := fractionParam(params, "smoothing", DefaultDynamicWeightsSmoothing)
		if err != nil {
			return nil, err
		}
		ratio, err := floatParam(params, "max_ratio", DefaultDynamicWeightsMaxRatio, 1, 1e6)
		if err != nil {
			return nil, err
		}
		return func(env *buildEnv) Picker {
			return newDynamicWeights(env.n, env.clock, interval, alpha, ratio)
		}, nil
	})
}

// dynamicWeights is the "dynamic-weights" strategy: smooth weighted round
// robin (nginx's, as weighted-round-robin) on weights recomputed every
// interval from what the backends report about themselves and how they
// answered — the "dynamic weighted round robin" of the article on thirteen
// load-balancing algorithms, whose servers report their state to the
// balancer, which turns it into weights periodically.
//
// Signal. Per endpoint and interval the strategy counts the outcomes, the
// successes (not Outcome.Failed), the sum of their latencies, and the mean
// of the loads reported with them (faultyserver.LoadHeader: the other
// requests the instance held as it answered, Outcome.Load with HasLoad).
// At the end of the interval T, with S successes:
//
//	occupancy = max(Σ latency / T, mean reported load)
//	sample    = (S / T) / occupancy
//
// The first term of occupancy is Little's law applied to this Balancer's
// own requests: their mean number in flight at the instance. The second is
// the instance's mean number in the system as it reports it, other
// clients' requests included (a departing answer sees the number a Poisson
// arrival would). The sample is goodput per request held: for a lone client
// it is (1 − failure ratio) / mean latency, so an unsaturated instance is
// weighted by its speed (1/service time), a saturated one loses weight as
// its queue grows its latency, one busy with other clients' requests loses
// weight by its reported load, and one that fails fast gets no weight for
// its speed (the trap of weighting by response time alone). Since a
// weight is this Balancer's rate to the instance over what the instance
// holds, the weights settle where every instance holds the same number of
// requests: one that holds fewer than the others gains weight each
// interval and one that holds more loses it; with equal worker counts that
// is equal utilization. An instance whose other clients alone keep it
// above that level goes to the floor (below).
//
// Utilization: the article's servers report their utilization (CPU, busy
// time). The HTTP answer does not carry it: LoadHeader holds only the
// instance's load; faultyserver measures utilization from busy time but
// sends it only in gRPC's ORCA report, and Outcome has no field for it. So
// the occupancy above stands in for it. Utilization would be busy workers /
// workers; occupancy does not divide by the workers, which the client does
// not know: two instances of equal speed but different worker counts get
// equal weights until the smaller one queues.
//
// Smoothing: an endpoint's weight is the EWMA across intervals of its
// samples, weight ← smoothing·sample + (1−smoothing)·weight (smoothing
// default 0.5, in (0, 1]; its first sample is taken as is). An endpoint
// without outcomes in an interval keeps its weight. Endpoints that never
// had one use the mean of the weights known (all 1 before any: plain round
// robin, in id order), as grpc-go's weighted_round_robin gives weightless
// endpoints the mean. Every weight is then clamped to [mean/max_ratio,
// mean·max_ratio] (max_ratio default 10): grpc-go has no floor, but an
// endpoint pushed to zero would get no requests and so no sample that
// could restore it; with the floor it gets about 1/(max_ratio·N) of them.
// When every known weight is 0 (no endpoint answered a request
// successfully), all weights are equal.
//
// Timing: intervals (default 5s) start at the first Pick and run on a fixed
// grid; nothing runs in the background. The weights are recomputed at the
// first Pick, done or Sweep at or after an interval's end, from the
// outcomes whose done ran within it; an outcome that arrives after the end
// triggers the recomputation first and counts in the next interval.
// Intervals that pass without an outcome leave the weights as they are.
// State is kept by endpoint id for the Balancer's lifetime, including while
// an endpoint is out of the host set; the mean covers every endpoint with a
// weight.
//
// Picking: on each pick every given host's current weight grows by its
// weight, the largest is picked (ties to the lowest id, whatever the order
// of hosts), and the sum of the given weights is taken from it; the
// current weights carry over when the weights change, as nginx keeps them
// when a server's effective weight changes. O(n) per pick.
//
// Departures from the article: it names CPU, memory, connections and
// response time reported by an agent on each server and polled or pushed on
// a timer; here the signal is what every HTTP answer carries (the load
// report) and what the client sees (latency, failures), combined by
// Little's law as above, and the weights change lazily on the traffic at
// interval boundaries rather than on a timer. Its weights are capacities
// configured up front and scaled by the reports; here they are derived from
// the reports alone (Env.Weights is ignored), with the EWMA and the
// max_ratio clamp added so that one noisy interval neither swings the
// traffic nor starves an endpoint.
type dynamicWeights struct {
	// Immutable after construction.
	clock    Clock
	interval time.Duration
	alpha    float64
	ratio    float64
	dones    []func(Outcome) // per endpoint, so that a pick allocates nothing

	// Mutable; the Balancer's mutex guards everything below.
	acc      []dwCounts // outcomes of the current interval, by endpoint id
	weight   []float64  // smoothed sample by endpoint id; valid when known
	known    []bool
	eff      []float64 // the weights picks use, by endpoint id
	current  []float64 // smooth weighted round robin's current weights
	nextTick time.Time // end of the current interval; zero before the first Pick
}

// dwCounts are one endpoint's outcomes during an interval.
type dwCounts struct {
	outcomes, successes int64
	latency             float64 // seconds, summed over every outcome
	load                float64 // sum of the reported loads
	loads               int64   // outcomes that reported a load
}

var (
	_ Picker  = (*dynamicWeights)(nil)
	_ Sweeper = (*dynamicWeights)(nil)
)

func newDynamicWeights(n int, clock Clock, interval time.Duration, alpha, ratio float64) *dynamicWeights {
	d := &dynamicWeights{
		clock:    clock,
		interval: interval,
		alpha:    alpha,
		ratio:    ratio,
		dones:    make([]func(Outcome), n),
		acc:      make([]dwCounts, n),
		weight:   make([]float64, n),
		known:    make([]bool, n),
		eff:      make([]float64, n),
		current:  make([]float64, n),
	}
	for ep := range d.dones {
		d.dones[ep] = func(o Outcome) { d.observe(ep, o) }
		d.eff[ep] = 1
	}
	return d
}

func (d *dynamicWeights) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	now := d.clock.Now()
	switch {
	case d.nextTick.IsZero():
		d.nextTick = now.Add(d.interval)
	case !now.Before(d.nextTick):
		d.tick(now)
	}
	if len(hosts) == 1 {
		return hosts[0], d.dones[hosts[0]]
	}
	best := -1
	var bestCur, total float64
	for _, h := range hosts {
		w := d.eff[h]
		total += w
		c := d.current[h] + w
		d.current[h] = c
		if best < 0 || c > bestCur || c == bestCur && h < best {
			best, bestCur = h, c
		}
	}
	d.current[best] = bestCur - total
	return best, d.dones[best]
}

// observe counts one outcome of ep, after the recomputation due by now.
func (d *dynamicWeights) observe(ep int, o Outcome) {
	if !d.nextTick.IsZero() {
		if now := d.clock.Now(); !now.Before(d.nextTick) {
			d.tick(now)
		}
	}
	a := &d.acc[ep]
	a.outcomes++
	if !o.Failed() {
		a.successes++
	}
	a.latency += o.Latency.Seconds()
	if o.HasLoad && !math.IsNaN(o.Load) && o.Load >= 0 {
		a.load += o.Load
		a.loads++
	}
}

// Sweep recomputes the weights when an interval ended at or before now.
func (d *dynamicWeights) Sweep(now time.Time) {
	if !d.nextTick.IsZero() && !now.Before(d.nextTick) {
		d.tick(now)
	}
}

// tick ends the interval that ended at nextTick: it folds that interval's
// samples into the weights and starts the interval that holds now (the
// ones between were empty: any outcome in them would have ticked first).
func (d *dynamicWeights) tick(now time.Time) {
	T := d.interval.Seconds()
	for ep := range d.acc {
		a := d.acc[ep]
		if a.outcomes == 0 {
			continue
		}
		d.acc[ep] = dwCounts{}
		sample, ok := dwSample(a, T)
		if !ok {
			continue
		}
		if d.known[ep] {
			d.weight[ep] += d.alpha * (sample - d.weight[ep])
		} else {
			d.weight[ep], d.known[ep] = sample, true
		}
	}
	d.effective()
	k := now.Sub(d.nextTick)/d.interval + 1
	d.nextTick = d.nextTick.Add(k * d.interval)
}

// dwSample is the goodput per request held of one endpoint's counts over T
// seconds; false when its occupancy is 0 (every answer instant and no load
// reported), which says nothing of its capacity.
func dwSample(a dwCounts, T float64) (float64, bool) {
	occupancy := a.latency / T
	if a.loads > 0 {
		occupancy = max(occupancy, a.load/float64(a.loads))
	}
	if a.successes == 0 {
		return 0, true
	}
	if !(occupancy > 0) {
		return 0, false
	}
	return float64(a.successes) / T / occupancy, true
}

// effective sets the weights picks use: the known weights, the mean of
// them for the endpoints without, all clamped to [mean/ratio, mean·ratio].
func (d *dynamicWeights) effective() {
	var sum float64
	n := 0
	for ep, ok := range d.known {
		if ok {
			sum += d.weight[ep]
			n++
		}
	}
	if n == 0 || !(sum > 0) {
		for ep := range d.eff {
			d.eff[ep] = 1
		}
		return
	}
	mean := sum / float64(n)
	lo, hi := mean/d.ratio, mean*d.ratio
	for ep := range d.eff {
		w := mean
		if d.known[ep] {
			w = min(max(d.weight[ep], lo), hi)
		}
		d.eff[ep] = w
	}
}
