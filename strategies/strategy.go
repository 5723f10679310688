// Package strategies holds the load-balancing algorithms of lbchaos and the
// wrappers that modify them (outlier ejection).
//
// A strategy is a [Picker]: it chooses one endpoint for a request and returns
// a done callback through which the caller reports the [Outcome] exactly once,
// the shape of grpc-go's balancer.Picker (PickResult.Done) and of
// bufbuild/httplb's picker (whenDone). Wrappers such as ejection are Pickers
// that filter the hosts they pass to an inner Picker and chain its done.
//
// A [Balancer] is a built strategy, named by a spec string such as
// "least-inflight+eject(consecutive=5,duration=5s)" (see [Parse]). It owns
// what outlives a single pick, as grpc-go's balancers do: the per-endpoint
// in-flight counters, which it increments at pick and decrements at done, and
// the mutex that serialises every Picker call and every done.
//
// Time and randomness are injected through [Env]: nothing here reads the wall
// clock or a global random source, starts a goroutine or sets a timer, so a
// virtual-time simulator can drive the same code and a seed makes a run
// repeatable. Time-based work (re-admission after ejection) happens lazily on
// Pick, or when [Balancer.Sweep] is called.
package strategies

import (
	"math/rand/v2"
	"time"
)

// Outcome is what the caller learned about one request.
type Outcome struct {
	Status  int           // HTTP status; 0 when no response arrived
	Err     error         // transport error (refused, reset, ...), nil otherwise
	Timeout bool          // the request hit the client's timeout
	Latency time.Duration // from pick to done
}

// Failed reports whether the request counts as a failure: a transport error,
// a timeout or a 5xx status (Envoy's consecutive_5xx treats locally
// originated errors as 5xx too).
func (o Outcome) Failed() bool {
	return o.Err != nil || o.Timeout || o.Status >= 500
}

// Request describes a request to the picker.
type Request struct {
	Key    uint64 // affinity key for hash-based strategies; none uses it yet
	HasKey bool   // whether Key is set
}

// Clock is the source of the current time.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Event kinds.
const (
	EventEject   = "eject"
	EventReadmit = "readmit"
)

// Event records an ejection or a re-admission of an endpoint.
type Event struct {
	Time     time.Time // the Env clock's time when the change took effect
	Endpoint int
	Kind     string // EventEject or EventReadmit
}

// Env is what a strategy is built against.
type Env struct {
	// N is the number of endpoints, with ids 0..N-1; it must be at least 1.
	N int
	// Clock is the time source; nil means SystemClock.
	Clock Clock
	// Rand is the only source of random choices; it must not be nil, so
	// that a seed makes a run repeatable. The Balancer serialises its use
	// under its mutex; nothing else may use it concurrently.
	Rand *rand.Rand
	// Events, when not nil, observes ejections and re-admissions. It is
	// called synchronously with the Balancer's mutex held and must not call
	// back into the Balancer.
	Events func(Event)
}

// Picker chooses one endpoint.
//
// hosts is non-empty and ascending; it is read-only and must not be retained,
// except that a wrapper may remember its identity (backing array and length)
// to cache a slice derived from it: a caller passes a new slice, never the
// same one rewritten in place, when its host set changes. The returned
// endpoint is one of hosts, and done is non-nil and must be invoked exactly
// once with the request's outcome.
//
// Pickers are not safe for concurrent use: the Balancer calls Pick and every
// done under one mutex. Pickers that need in-flight counts read the
// Balancer's counters (see the Balancer doc) rather than keeping their own,
// as Caddy's reverse proxy counts requests for its selection policies.
type Picker interface {
	Pick(req Request, hosts []int) (endpoint int, done func(Outcome))
}

// Sweeper is implemented by Pickers with time-based state, such as the eject
// wrapper. Sweep applies every change due at or before now; Pick does the
// same lazily with the Env clock.
type Sweeper interface {
	Sweep(now time.Time)
}

// noDone is the done of Pickers that learn nothing from outcomes.
func noDone(Outcome) {}

// buildEnv is what a registered strategy is built from: the checked Env plus
// the Balancer's in-flight counters.
type buildEnv struct {
	n      int
	clock  Clock
	rand   *rand.Rand
	events func(Event)
	// inflight holds the requests in flight per endpoint, maintained by the
	// Balancer and read by Pickers under the Balancer's mutex.
	inflight []int64
}
