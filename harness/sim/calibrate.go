package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/lbchaos/lbchaos/reports"
	"github.com/lbchaos/lbchaos/strategies"
)

// CalibrationSchema is the schema of a calibration document (see
// Calibration).
const CalibrationSchema = "lbchaos-calibration/1"

// DefaultPreShare is the share of a request's overhead spent before its
// instance starts on it when the calibration does not say.
const DefaultPreShare = 0.5

// Calibration is the transport and scheduling overhead a calibrated
// simulation adds to every request its strategy sends to an instance: the
// distribution of a real run's latency minus the instance's own time for a
// request (summary.json transport_overhead_ms), per strategy.
//
// Model. Each request draws one overhead O from its strategy's
// distribution (Default for a strategy the calibration does not name), by
// inverse transform sampling of the piecewise-linear quantile function
// through the recorded percentiles, from a source seeded with the
// experiment's seed. The first PreShare·O passes between the strategy's
// pick and the instance starting on the request (planning it, taking a
// worker or queueing), the rest between the instance's answer and the
// outcome reaching the strategy and the collector. So the strategy sees a
// request in flight for its whole real-world time, and a fault or a worker
// acts on the request when it reaches the instance (a plan's Latency runs
// from there). A reset and a full queue's 503 come back after the overhead
// too; a pick with no host at all is reported at once. The load an answer
// carries is its instance's as the answer reaches the strategy.
//
// As a document (a file given to --calibrate), JSON:
//
//	{
//	  "schema": "lbchaos-calibration/1",
//	  "pre_share": 0.5,
//	  "transport_overhead_ms": {"p1": 0.1, "p10": 0.15, "p50": 0.3, "p90": 0.6, "p99": 1.5, "p999": 4, "max": 20},
//	  "strategies": {"least-inflight": {"p1": 0.1, ...}}
//	}
//
// transport_overhead_ms is the default distribution and strategies the
// distributions by strategy name, each as summary.json's Overhead (its
// percentiles, or its quantiles when given); either may be left out, not
// both. pre_share, from 0 to 1, defaults to DefaultPreShare.
type Calibration struct {
	// From names the run or file the calibration came from.
	From string
	// Started is the calibrating run's start; zero for a document.
	Started time.Time
	// PreShare is the share of each overhead spent before the instance
	// starts on the request, from 0 to 1.
	PreShare float64
	// Default is the distribution of a strategy not in ByStrategy.
	Default *reports.Overhead
	// ByStrategy holds the distributions by strategy name.
	ByStrategy map[string]*reports.Overhead
	// Real is the calibrating run's summary, when it was one.
	Real *reports.Summary
}

// calibrationDoc is a calibration document's JSON form.
type calibrationDoc struct {
	Schema     string                       `json:"schema"`
	PreShare   *float64                     `json:"pre_share,omitempty"`
	Overhead   *reports.Overhead            `json:"transport_overhead_ms,omitempty"`
	Strategies map[string]*reports.Overhead `json:"strategies,omitempty"`
}

// LoadCalibration reads a calibration from path: a real run's directory, its
// summary.json, or a calibration document (see Calibration).
func LoadCalibration(path string) (*Calibration, error) {
	file := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		file = filepath.Join(path, reports.SummaryFile)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var head struct {
		Schema string `json:"schema"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	switch head.Schema {
	case reports.Schema:
		sum, err := reports.ReadJSON(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		c, err := CalibrationFromSummary(sum)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		c.From = path
		return c, nil
	case CalibrationSchema:
		var doc calibrationDoc
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&doc); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		c := &Calibration{From: path, PreShare: DefaultPreShare, Default: doc.Overhead, ByStrategy: doc.Strategies}
		if doc.PreShare != nil {
			c.PreShare = *doc.PreShare
		}
		if err := c.Check(); err != nil {
			return nil, fmt.Errorf("%s: %w", file, err)
		}
		return c, nil
	}
	return nil, fmt.Errorf("%s: schema %q is neither a run's summary (%s) nor a calibration (%s)", file, head.Schema, reports.Schema, CalibrationSchema)
}

// CalibrationFromSummary returns the calibration a real run's summary
// carries: each strategy's transport_overhead_ms, and as the default their
// pooled distribution (percentiles averaged, weighted by count). It fails
// when no strategy measured its overhead (a simulated run, gRPC, proxies,
// several generators).
func CalibrationFromSummary(sum *reports.Summary) (*Calibration, error) {
	c := &Calibration{Started: sum.Started, PreShare: DefaultPreShare, ByStrategy: map[string]*reports.Overhead{}, Real: sum}
	for i := range sum.Strategies {
		st := &sum.Strategies[i]
		if st.TransportOverheadMs != nil && st.TransportOverheadMs.Count > 0 {
			c.ByStrategy[st.Name] = st.TransportOverheadMs
		}
	}
	if len(c.ByStrategy) == 0 {
		return nil, errors.New("no strategy has transport_overhead_ms: calibrate from a real run (--engine real) with one generator against lbchaos's own HTTP instances")
	}
	c.Default = pooled(c.ByStrategy)
	return c, c.Check()
}

// pooled averages the distributions' percentiles, weighted by count.
func pooled(by map[string]*reports.Overhead) *reports.Overhead {
	var out reports.Overhead
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range by {
			if !yield(k) {
				return
			}
		}
	})
	for _, n := range names {
		out.Count += by[n].Count
	}
	for _, n := range names {
		o, w := by[n], float64(by[n].Count)/float64(out.Count)
		out.Mean += w * o.Mean
		out.P1 += w * o.P1
		out.P10 += w * o.P10
		out.P50 += w * o.P50
		out.P90 += w * o.P90
		out.P99 += w * o.P99
		out.P999 += w * o.P999
		out.Max = max(out.Max, o.Max)
	}
	return &out
}

// Check reports whether c can calibrate a simulation.
func (c *Calibration) Check() error {
	if !(c.PreShare >= 0 && c.PreShare <= 1) {
		return fmt.Errorf("pre_share: must be from 0 to 1, got %v", c.PreShare)
	}
	if c.Default == nil && len(c.ByStrategy) == 0 {
		return errors.New("no distribution: give transport_overhead_ms or strategies")
	}
	check := func(what string, o *reports.Overhead) error {
		if o == nil {
			return fmt.Errorf("%s: null", what)
		}
		if _, err := newQuantileFunc(o); err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		return nil
	}
	if c.Default != nil {
		if err := check("transport_overhead_ms", c.Default); err != nil {
			return err
		}
	}
	for name, o := range c.ByStrategy {
		if err := check("strategies."+name, o); err != nil {
			return err
		}
	}
	return nil
}

// distribution returns the overhead distribution for the named strategy.
func (c *Calibration) distribution(name string) *reports.Overhead {
	if o, ok := c.ByStrategy[name]; ok {
		return o
	}
	if c.Default != nil {
		return c.Default
	}
	return pooled(c.ByStrategy)
}

// quantileFunc is a distribution's quantile function, piecewise linear
// through (p[i], v[i]): p increasing from 0 to 1, v non-decreasing, in
// nanoseconds.
type quantileFunc struct{ p, v []float64 }

// newQuantileFunc returns o's quantile function: through its quantiles at
// every percent when it has them, else through p1 ... p99.9, with the
// minimum taken as p1 and the maximum as max.
func newQuantileFunc(o *reports.Overhead) (quantileFunc, error) {
	var q quantileFunc
	if n := len(o.Quantiles); n > 0 {
		if n < 2 {
			return q, errors.New("quantiles: need at least 2 (the minimum and the maximum)")
		}
		for i, v := range o.Quantiles {
			q.p = append(q.p, float64(i)/float64(n-1))
			q.v = append(q.v, v)
		}
	} else {
		q.p = []float64{0, 0.01, 0.1, 0.5, 0.9, 0.99, 0.999, 1}
		q.v = []float64{o.P1, o.P1, o.P10, o.P50, o.P90, o.P99, o.P999, max(o.Max, o.P999)}
	}
	prev := 0.0
	for i, v := range q.v {
		if !(v >= 0) || math.IsInf(v, 0) {
			return q, fmt.Errorf("a quantile is %v ms; each must be a finite number >= 0", v)
		}
		if i > 0 && v < prev {
			return q, fmt.Errorf("quantiles must not decrease, got %v ms after %v ms", v, prev)
		}
		prev = v
		q.v[i] = v * float64(time.Millisecond)
	}
	return q, nil
}

// at returns the quantile at u in [0, 1).
func (q quantileFunc) at(u float64) time.Duration {
	i, _ := slices.BinarySearch(q.p, u) // q.p[i-1] < u <= q.p[i]
	switch {
	case i == 0:
		return time.Duration(q.v[0])
	case i >= len(q.p):
		return time.Duration(q.v[len(q.v)-1])
	}
	f := (u - q.p[i-1]) / (q.p[i] - q.p[i-1])
	return time.Duration(q.v[i-1] + f*(q.v[i]-q.v[i-1]))
}

// calibrationStream keeps the overhead draws apart from every other source
// of the simulation, so that a calibration changes no instance's draws.
const calibrationStream = 0x63616c6962726174 // "calibrat"

// maxPost is the largest overhead after the answer simReq.post holds.
const maxPost = time.Duration(math.MaxUint32)

// calibrated is a calibration as one strategy's simulation applies it.
type calibrated struct {
	q   quantileFunc
	pre float64
	rng *rand.Rand
}

func newCalibrated(c *Calibration, name string, seed uint64) (*calibrated, error) {
	q, err := newQuantileFunc(c.distribution(name))
	if err != nil {
		return nil, err
	}
	return &calibrated{q: q, pre: c.PreShare, rng: rand.New(rand.NewPCG(seed, calibrationStream))}, nil
}

// draw returns one request's overhead before its instance starts on it and
// after its answer.
func (c *calibrated) draw() (pre, post time.Duration) {
	o := c.q.at(c.rng.Float64())
	pre = time.Duration(c.pre * float64(o))
	return pre, min(o-pre, maxPost)
}

// Request states of a calibrated simulation, beside those of sim.go: a
// request on its way to its instance, or its answer on its way back.
const (
	stOutbound uint16 = 1 << (iota + 4)
	stInbound
)

// kindReset is a request its instance resets (its plan, admit.go), or,
// calibrated, one it reset, on its way back.
const kindReset uint8 = kindHang + 1

// sendCalibrated sends request req, picked for instance ep at t, on its way
// there: it reaches it after the overhead before service (deliver).
func (s *sim) sendCalibrated(ep int, t time.Duration, req strategies.Request, lb int32, tk strategies.Ticket, src int32) {
	pre, post := s.cal.draw()
	r := s.alloc(ep, t, req, lb, tk, kindServe, stWaiting|stOutbound, src)
	s.reqs[r].post = uint32(post)
	s.schedule(t+pre, r)
}

// answerCalibrated handles the event of request i in a calibrated
// simulation: its arrival at its instance, its answer reaching the client,
// or the instance's answer, which then goes back.
func (s *sim) answerCalibrated(i int32) {
	r := &s.reqs[i]
	switch {
	case r.state&stOutbound != 0:
		r.state &^= stOutbound
		s.deliver(i)
		return
	case r.state&stInbound != 0:
		switch r.kind {
		case kindReset:
			s.end(i, 0, errSimReset, false)
		default:
			s.end(i, int(r.status), nil, false)
		}
		s.freeSlot(i)
		return
	}
	status := int(r.status)
	if r.kind == kindServe {
		s.insts[r.inst].busyFor += s.clock.now - r.began
		s.release(int(r.inst))
		if r.state&stWaiting == 0 {
			s.freeSlot(i) // its client timed out (KeepAbandoned)
			return
		}
		status = 200
	}
	s.sendBack(i, r.kind, status)
}

// sendBack puts request i's answer on its way back to its client.
func (s *sim) sendBack(i int32, kind uint8, status int) {
	r := &s.reqs[i]
	r.kind, r.status = kind, int32(status)
	r.state = r.state&^(stQueued|stWorking) | stInbound
	s.schedule(s.clock.now+time.Duration(r.post), i)
}

// deliver lets request i's instance plan it as it arrives there now, as
// arrive does in an uncalibrated simulation.
func (s *sim) deliver(i int32) {
	s.admit(i, s.planFor(int(s.reqs[i].inst), s.reqs[i].lb))
}

// removeQueued removes request i from queue q, keeping the others' order,
// and reports whether it was there. In a calibrated simulation requests
// reach their instance in another order than they arrived in, so the
// request timing out is near, not always at, its queue's front.
func removeQueued(q *ring[int32], i int32) bool {
	mask := len(q.buf) - 1
	for k := range q.n {
		if q.buf[(q.head+k)&mask] != i {
			continue
		}
		for ; k > 0; k-- {
			q.buf[(q.head+k)&mask] = q.buf[(q.head+k-1)&mask]
		}
		q.head = (q.head + 1) & mask
		q.n--
		return true
	}
	return false
}
