package strategies

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Limits of the fastest-response strategy's window: the default, the number
// of response times averaged per host in the survey of thirteen
// load-balancing algorithms, and the largest accepted, which bounds the
// memory a Balancer keeps (window latencies per endpoint).
const (
	DefaultFastestResponseWindow = 10
	MaxFastestResponseWindow     = 10_000
)

func init() {
	registerBase("fastest-response", []string{"window"}, func(params map[string]string) (func(*buildEnv) Picker, error) {
		window, err := intParam(params, "window", DefaultFastestResponseWindow, 1)
		if err != nil {
			return nil, err
		}
		if window > MaxFastestResponseWindow {
			return nil, fmt.Errorf("window: want an integer from 1 to %d, got %d", MaxFastestResponseWindow, window)
		}
		return func(env *buildEnv) Picker {
			return newFastestResponse(env.n, window, env.rand)
		}, nil
	})
}

// fastestResponse is the "fastest-response" strategy of the survey of
// thirteen load-balancing algorithms: every host keeps its last window
// response times, and a pick scans every host and takes the one whose
// average of them is lowest. Ties are broken uniformly at random (one draw
// per pick, whatever the order of hosts).
//
// The survey tells of its trap, which the fastest-response-trap experiment
// reproduces: after a network jitter one instance of a payment gateway was
// marginally faster, got all the traffic, overloaded, and was then shunned
// while the others recovered, an oscillation one balancer makes on its own.
// Nothing here damps it, on purpose.
//
// Where the survey says nothing, this implementation decides, and departs
// from what a production balancer would do:
//   - Requests in flight do not count. The average moves only when
//     responses come back, so between two answers from the fastest host
//     every pick goes to it; that is the pile-up the survey describes
//     (ewma and peak-ewma multiply by in flight + 1 to avoid it).
//   - A host without a response yet counts as average 0, so it is tried
//     first: at the start every host draws picks (ties shared at random)
//     until its first answer, and a host that joins takes every pick until
//     its first answer comes back.
//   - Every outcome feeds its latency (pick to done; a negative one counts
//     as 0, one beyond 10 days as 10 days), failures included: a host that fails in 1ms looks fastest and
//     draws the traffic, and a timeout counts as the timeout.
//   - The average never decays and no host is probed: a host that is
//     shunned keeps its last window until every other host looks slower, so
//     it gets no traffic after it recovered, the second half of the
//     survey's story.
//   - State is kept by endpoint id for the Balancer's lifetime: an endpoint
//     that leaves the host set and comes back keeps its window.
//
// It reads no clock: the window counts responses, not time.
type fastestResponse struct {
	// Immutable after construction.
	window int
	dones  []func(Outcome) // per endpoint, so that a pick allocates nothing

	// Mutable; the Balancer's mutex guards it.
	hosts   []fastestHost // indexed by endpoint id
	samples []int64       // host ep's ring is samples[ep*window : (ep+1)*window], nanoseconds
	// avg is each endpoint's average in nanoseconds, 0 before its first
	// sample; kept beside hosts so that a scan reads one dense slice.
	avg  []float64
	rand *rand.Rand
}

// fastestHost is the window of response times of one endpoint.
type fastestHost struct {
	sum   int64 // of the count latest samples, nanoseconds
	count int   // samples in the window, up to window
	next  int   // index in the ring of the next sample to write
}

// fastestMaxSample caps a sample (about 10.7 days) so that a full window's
// sum cannot overflow.
const fastestMaxSample = math.MaxInt64 / MaxFastestResponseWindow

var _ Picker = (*fastestResponse)(nil)

func newFastestResponse(n, window int, r *rand.Rand) *fastestResponse {
	f := &fastestResponse{
		window:  window,
		dones:   make([]func(Outcome), n),
		hosts:   make([]fastestHost, n),
		samples: make([]int64, n*window),
		avg:     make([]float64, n),
		rand:    r,
	}
	for ep := range f.dones {
		f.dones[ep] = func(o Outcome) { f.observe(ep, o) }
	}
	return f
}

// Pick returns the host of lowest average, ties uniformly at random
// whatever the order of hosts (leastLoaded).
func (f *fastestResponse) Pick(_ Request, hosts []int) (int, func(Outcome)) {
	h := leastLoaded(hosts, f.avg, f.rand)
	return h, f.dones[h]
}

// average returns the mean of ep's window in nanoseconds, 0 when it has no
// sample yet.
func (f *fastestResponse) average(ep int) float64 { return f.avg[ep] }

// observe puts the latency of one outcome of ep into its window, replacing
// the oldest sample once the window is full.
func (f *fastestResponse) observe(ep int, o Outcome) {
	rtt := min(max(int64(o.Latency), 0), fastestMaxSample)
	h := &f.hosts[ep]
	ring := f.samples[ep*f.window : (ep+1)*f.window]
	if h.count == f.window {
		h.sum -= ring[h.next]
	} else {
		h.count++
	}
	ring[h.next] = rtt
	h.sum += rtt
	h.next++
	if h.next == f.window {
		h.next = 0
	}
	f.avg[ep] = float64(h.sum) / float64(h.count)
}
