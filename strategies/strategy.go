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
	// Load is the load the backend reported with its response (its
	// requests in flight, from faultyserver.LoadHeader); valid when
	// HasLoad is set.
	Load    float64
	HasLoad bool
	// Cancelled is set when the caller gave the attempt up because the
	// request no longer needed it (another attempt of a hedged request
	// answered first): no failure of the endpoint.
	Cancelled bool
}

// LocalOrigin reports whether the failure happened without an answer from
// the backend: a transport error (refused, reset) or a timeout. Envoy calls
// these locally originated errors.
func (o Outcome) LocalOrigin() bool {
	return !o.Cancelled && (o.Err != nil || o.Timeout)
}

// Failed reports whether the request counts as a failure: a transport error,
// a timeout or a 5xx status (Envoy's consecutive_5xx treats locally
// originated errors as 5xx too).
func (o Outcome) Failed() bool {
	return !o.Cancelled && (o.Err != nil || o.Timeout || o.Status >= 500)
}

// Request describes a request to the picker.
type Request struct {
	Key    uint64 // affinity key for hash-based strategies (from KeyHeader)
	HasKey bool   // whether Key is set; strategies that hash use 0 otherwise
	// NonIdempotent marks a request whose method is not idempotent (POST,
	// PATCH): a retry policy with idempotent_only leaves it alone.
	NonIdempotent bool
	// Exclude lists the hosts this request already tried, which a retry
	// with other_host, or a hedge, must avoid while another host is
	// allowed; the Balancer removes them from the hosts it picks from.
	Exclude []int
}

// Clock is the source of the current time.
type Clock interface {
	Now() time.Time
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// KeyHeader is the request header that carries a request's affinity key,
// a decimal uint64; the load generator sets it when the experiment draws
// keys, and the harness reads it into Request.Key.
const KeyHeader = "X-Lbchaos-Key"

// Event kinds.
const (
	EventEject   = "eject"   // the endpoint gets no traffic until re-admitted
	EventReadmit = "readmit" // an ejected endpoint gets traffic again
	// EventHealth is a change of an endpoint's health level; Detail names
	// the new level ("healthy", "degraded", "critical", "unhealthy").
	EventHealth = "health"
	// EventProbe is a change of an endpoint's actively checked state;
	// Detail is "down" or "up".
	EventProbe = "probe"
	// EventJoin is an endpoint entering the hosts picked from (the host
	// set of Balancer.SetHosts, narrowed to the members of
	// Balancer.SetMembers); EventLeave is one leaving them.
	EventJoin  = "join"
	EventLeave = "leave"
)

// Event records a change in a strategy's view of an endpoint.
type Event struct {
	Time     time.Time // the Env clock's time when the change took effect
	Endpoint int
	Kind     string // one of the Event* kinds
	Detail   string // kind-specific, e.g. the new health level; may be empty
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
	// Events, when not nil, observes ejections, re-admissions and health
	// changes. It is called synchronously with the Balancer's mutex held and
	// must not call back into the Balancer.
	Events func(Event)
	// Weights are the endpoints' configured weights (len N, each > 0 and
	// finite), as a balancer's per-host weight; nil means all equal (1).
	// Weighted strategies read them; the others ignore them.
	Weights []float64
	// Connections is how many connections the client holds, for the
	// strategies that balance connections rather than requests (the
	// pinned wrapper); 0 means DefaultConnections.
	Connections int
	// Loads, when not nil, is the shared load signal that strategies
	// reading reported load on an interval use (server-load with
	// report_interval); every replica of a strategy gets the same one, and
	// whoever runs them refreshes it every Balancer.LoadReports interval.
	// Such a strategy cannot be built without it.
	Loads LoadSource

	// Zones, when not nil, is the zone of each endpoint (len N, each name
	// non-empty), as an experiment's zones: assign its instances to zones
	// in order. The zone wrappers (zone-aware, priority-failover,
	// prefer-close) need it; every other strategy ignores it. nil means no
	// zones, and then LocalZone and ZoneClients must be empty too.
	Zones []string
	// LocalZone is the zone of the client this Balancer serves, the zone
	// its requests come from; required with Zones. It must be a zone of
	// Zones or of ZoneClients: a zone may have clients and no endpoint.
	LocalZone string
	// ZoneClients is how the clients of the whole experiment spread over
	// the zones, by zone name: each zone's share of the clients (Envoy's
	// local cluster, whose hosts per zone the zone-aware wrapper compares
	// with the upstream's). The shares are weights, normalised by their
	// sum (50, 30, 20 and 0.5, 0.3, 0.2 are the same); each is finite and
	// >= 0, a zone not named has no clients, and LocalZone must have a
	// share > 0. nil means the clients spread as the endpoints do (each
	// zone's share of Zones). Only zone-aware reads it.
	ZoneClients map[string]float64
}

// DefaultConnections is Env.Connections when it is 0: one connection, as
// an HTTP/2 or gRPC client holds one connection to an address (a
// Kubernetes Service's virtual IP, an L4 proxy).
const DefaultConnections = 1

// NoHost is the endpoint a wrapper picks when it allows none of the hosts,
// as Envoy answers "no healthy upstream" when every host is ejected and no
// panic threshold lets it ignore health. The caller fails the request at
// once without sending it, and still calls done.
const NoHost = -1

// Picker chooses one endpoint.
//
// hosts is non-empty and ascending (the Balancer and every wrapper keep that
// order), but a selection by load or weight must not depend on it: tests run
// each such selection with the loads, and the hosts, in every order. hosts
// is read-only and must not be retained. A Picker that derives state from its
// hosts (a ring, a schedule, a filtered list) implements [HostsUpdater] and
// learns of a change there, never by inspecting hosts. The returned
// endpoint is one of hosts, and done is non-nil and must be invoked exactly
// once with the request's outcome. Base strategies always return one of
// hosts; only a wrapper may return NoHost.
//
// Pickers are not safe for concurrent use: the Balancer calls Pick and every
// done under one mutex. Pickers that need in-flight counts read the
// Balancer's counters (see the Balancer doc) rather than keeping their own,
// as Caddy's reverse proxy counts requests for its selection policies.
type Picker interface {
	Pick(req Request, hosts []int) (endpoint int, done func(Outcome))
}

// HostsUpdater is implemented by Pickers that derive state from their hosts,
// as grpc-go's balancers regenerate their picker from a new snapshot and
// httplb's pickers are rebuilt from the previous one when the connections
// change.
//
// Whoever calls Pick (the Balancer for the outermost Picker, a wrapper for
// its inner one) calls UpdateHosts(hosts) right before the first Pick and
// right before every Pick whose hosts differ from those of the previous Pick
// (another set, or the same set in another order), with that Pick's hosts,
// and at no other time; hostFeed is the one implementation of that rule. So
// every Pick between two calls is given the hosts of the latest call, a
// Picker rebuilds what it derives exactly when they change, and a set that
// no Pick sees (an ejection undone before the next Pick) is never announced.
// hosts is non-empty, read-only and must not be retained.
type HostsUpdater interface {
	UpdateHosts(hosts []int)
}

// Sweeper is implemented by Pickers with time-based state, such as the eject
// wrapper. Sweep applies every change due at or before now; Pick does the
// same lazily with the Env clock.
type Sweeper interface {
	Sweep(now time.Time)
}

// Prober is implemented by Pickers that check endpoints actively, such as
// the healthcheck wrapper. Pickers start no goroutines and set no timers, so
// whoever runs the Balancer (the harness, the simulator) sends the probes:
// every ProbeConfig().Interval it checks each endpoint's health path with
// the given timeout and reports the result with Balancer.ReportProbe.
type Prober interface {
	ProbeConfig() ProbeConfig
	// ProbeResult records one probe of endpoint: healthy is true when it
	// answered 2xx within the timeout.
	ProbeResult(endpoint int, healthy bool, now time.Time)
}

// ProbeConfig says how to probe endpoints.
type ProbeConfig struct {
	Interval time.Duration // between probes of one endpoint
	Timeout  time.Duration // a probe not answered within it failed
	Path     string        // e.g. "/healthz"
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
	// weights are Env.Weights, or all 1 when it was nil; len n.
	weights []float64
	// inflight holds the requests in flight per endpoint, maintained by the
	// Balancer and read by Pickers under the Balancer's mutex.
	inflight []int64
	// conns is Env.Connections, or DefaultConnections when that was 0.
	conns int
	// loads is Env.Loads; nil when not given.
	loads LoadSource
	// zones is the checked Env.Zones, LocalZone and ZoneClients; nil
	// without zones.
	zones *zoneMap
	// inside are the Pickers already built, innermost first, while a
	// wrapper is built: the layers the new wrapper wraps (zone wrappers
	// read the health of those that take hosts out).
	inside []Picker
}
