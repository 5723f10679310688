package faultyserver

import (
	"math/rand/v2"
	"time"
)

// Blackhole stops reading: connections are still accepted, but nothing
// more is read from any of them, new or open, until the fault is cleared,
// so requests (and health checks) get no answer and their clients time
// out. Unlike hang, which reads each request and never answers it, the
// instance never sees the requests: it is a process stuck below HTTP, or
// a network path that delivers connections and nothing else. Answers to
// requests read before the fault still go out, over HTTP/1.1 whole. Over
// HTTP/2 (h2c, gRPC) every stream of a connection stops at once, and an
// answer under way stalls once it has filled the client's flow-control
// window: the client's WINDOW_UPDATE frames, which would let it go on,
// are no longer read.
//
// JSON: {"mode": "blackhole"}.
type Blackhole struct{}

func init() { register(Blackhole{}) }

// Mode returns "blackhole".
func (Blackhole) Mode() string { return "blackhole" }

// Validate accepts every Blackhole.
func (Blackhole) Validate() error { return nil }

// HealthStatus is 200; no health check reaches the instance.
func (Blackhole) HealthStatus() int { return 200 }

// Reachable is false: a health check gets no answer.
func (Blackhole) Reachable() bool { return false }

// Plan serves a request the server reads (one read before the fault):
// the fault acts on connections.
func (Blackhole) Plan(base time.Duration, _ *rand.Rand) Action {
	return Action{Kind: ActionServe, Service: base}
}

// planSeen is what a client sees: no answer (see SimulatedPlan).
func (Blackhole) planSeen(time.Duration, *rand.Rand) Action { return Action{Kind: ActionHang} }

func (Blackhole) connEffects() connEffects { return connEffects{blackhole: true} }
