package strategies

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// Defaults of predictive-least-conn.
const (
	DefaultPredictHorizon  = 5 * time.Second
	DefaultPredictInterval = time.Second
	DefaultPredictWindow   = 6
)

func init() {
	registerBase("predictive-least-conn", []string{"horizon", "interval", "window"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		horizon, err := durationParam(params, "horizon", DefaultPredictHorizon)
		if err != nil {
			return nil, err
		}
		interval, err := durationParam(params, "interval", DefaultPredictInterval)
		if err != nil {
			return nil, err
		}
		window, err := intParam(params, "window", DefaultPredictWindow, 2)
		if err != nil {
			return nil, err
		}
		if window > 1000 {
			return nil, fmt.Errorf("window: want an integer within [2, 1000], got %d", window)
		}
		return func(env *buildEnv) Picker {
			return newPredictiveLeastConn(env, horizon, interval, window)
		}, nil
	})
}

// predictiveLeastConn is "predictive-least-conn": least connections on
// each host's in-flight count forecast horizon ahead, the predictive
// least-connections of the survey of thirteen load-balancing algorithms,
// which forecasts every server's connection count from its recent history
// and sends the request to the one expected to be least loaded; the survey
// found simple forecasts doing better there than ARIMA.
//
// Model. Time is cut into periods of interval (from the first Pick); each
// host's mean in-flight count over a period is a sample, taken from the
// count seen at every Pick weighted by the time since the Pick before. At
// the end of each period, each host's trend is the least-squares slope of
// its last window samples against their periods' mid-times (0 until two
// are in). A pick goes to the host with the least
//
//	forecast = max(0, in flight now + slope × horizon)
//
// ties broken uniformly at random whatever the order of hosts. Periods end
// lazily, at the first Pick after them, so the strategy needs no timer and
// runs the same on the simulator's virtual clock; a period that spans an
// idle gap is one longer sample at its own mid-time.
//
// The defaults (horizon 5 s, interval 1 s, window 6) extrapolate a trend
// no further ahead than the 5 s of history it is fitted to; a shorter
// history (interval=500ms) extrapolated as far swings traffic between
// hosts, the count's noise multiplied by the horizon.
//
// Where it departs from the survey: the history is the in-flight count
// from this Balancer (not connections reported by the servers); the model
// is a least-squares line over a short window, not a learned or ARIMA
// model; the forecast is clamped at 0, so every host whose load is falling
// fast ties at 0. A rising trend steers traffic away before the count
// itself is high (the early move); a falling one keeps a host looking
// empty for as long as its trend stays in the window, so traffic swings to
// it and overshoots.
type predictiveLeastConn struct {
	// Immutable.
	clock    Clock
	rand     *rand.Rand
	inflight []int64 // by endpoint id; maintained by the Balancer
	horizon  float64 // seconds
	interval time.Duration
	window   int

	// Guarded by the Balancer's mutex.
	started     bool
	base        time.Time // first Pick: sample times are seconds since it
	last        time.Time // previous Pick
	periodStart time.Time
	acc         []float64   // ∫ in flight dt (count·s) over the current period, by endpoint
	times       []float64   // ring: the mid-times of the last window periods
	samples     [][]float64 // samples[ep] is a ring parallel to times
	head, count int         // next slot of the rings; samples held (<= window)
	slope       []float64   // by endpoint, requests in flight per second
	fc          []float64   // by endpoint: this Pick's forecasts (scratch)
}

var _ Picker = (*predictiveLeastConn)(nil)

func newPredictiveLeastConn(env *buildEnv, horizon, interval time.Duration, window int) *predictiveLeastConn {
	p := &predictiveLeastConn{
		clock: env.clock, rand: env.rand, inflight: env.inflight,
		horizon: horizon.Seconds(), interval: interval, window: window,
		acc:     make([]float64, env.n),
		times:   make([]float64, window),
		samples: make([][]float64, env.n),
		slope:   make([]float64, env.n),
		fc:      make([]float64, env.n),
	}
	for ep := range p.samples {
		p.samples[ep] = make([]float64, window)
	}
	return p
}

func (p *predictiveLeastConn) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	p.observe(p.clock.Now())
	for _, h := range hosts {
		p.fc[h] = p.forecast(h)
	}
	return leastLoaded(hosts, p.fc, p.rand), noDone
}

// forecast is endpoint ep's in-flight count expected horizon from now.
func (p *predictiveLeastConn) forecast(ep int) float64 {
	return max(0, float64(p.inflight[ep])+float64(p.slope[ep]*p.horizon))
}

// observe accumulates the in-flight counts up to now and closes the
// current period when it is over.
func (p *predictiveLeastConn) observe(now time.Time) {
	if !p.started {
		p.started, p.base, p.last, p.periodStart = true, now, now, now
		return
	}
	if dt := now.Sub(p.last).Seconds(); dt > 0 {
		for ep, n := range p.inflight {
			p.acc[ep] += float64(n) * dt
		}
		p.last = now
	}
	span := now.Sub(p.periodStart)
	if span < p.interval {
		return
	}
	mid := (p.periodStart.Sub(p.base) + span/2).Seconds()
	p.times[p.head] = mid
	for ep := range p.samples {
		p.samples[ep][p.head] = p.acc[ep] / span.Seconds()
		p.acc[ep] = 0
	}
	p.head = (p.head + 1) % p.window
	p.count = min(p.count+1, p.window)
	p.periodStart = now
	p.fit()
}

// fit sets every endpoint's slope to the least-squares slope of its
// samples against their times.
func (p *predictiveLeastConn) fit() {
	if p.count < 2 {
		return
	}
	// The rings hold count samples at slots head-count .. head-1 (mod
	// window); any order gives the same sums.
	var tMean float64
	for j := range p.count {
		tMean += p.times[p.slot(j)]
	}
	tMean /= float64(p.count)
	var sxx float64
	for j := range p.count {
		d := p.times[p.slot(j)] - tMean
		sxx += float64(d * d)
	}
	for ep, ys := range p.samples {
		var yMean, sxy float64
		for j := range p.count {
			yMean += ys[p.slot(j)]
		}
		yMean /= float64(p.count)
		for j := range p.count {
			s := p.slot(j)
			sxy += float64((p.times[s] - tMean) * (ys[s] - yMean))
		}
		p.slope[ep] = sxy / sxx
	}
}

// slot returns the ring slot of the j-th oldest sample held.
func (p *predictiveLeastConn) slot(j int) int {
	return (p.head - p.count + j + p.window) % p.window
}
