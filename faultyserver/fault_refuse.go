package faultyserver

import (
	"math/rand/v2"
	"time"
)

// Refuse turns new connections away while the connections already open go
// on: each connection accepted while the fault is in force is reset (an
// RST) at its first read, if the fault is still in force then, so its
// client's first request fails at once. That read takes the request's
// first bytes (the instance sniffs them to tell a control connection,
// which is exempt: see ConnFault), but no request is served. A connection
// accepted before the fault was set goes on, even one idle with nothing
// read yet. With keep-alive, a client that holds its connections does not
// notice; one that opens a connection per request fails every request.
//
// A refused connection is accepted first, so its client's connect
// succeeds and its first request's answer is a reset; a kernel that
// refuses the SYN (nothing listening) fails the connect itself. For a
// client both end the request at once, before the instance serves it.
//
// JSON: {"mode": "refuse"}.
type Refuse struct{}

func init() { register(Refuse{}) }

// Mode returns "refuse".
func (Refuse) Mode() string { return "refuse" }

// Validate accepts every Refuse.
func (Refuse) Validate() error { return nil }

// HealthStatus is 200; a health check on a new connection is refused.
func (Refuse) HealthStatus() int { return 200 }

// Reachable is false: a health check on a new connection is refused.
func (Refuse) Reachable() bool { return false }

// Plan serves a request the server reads, on a connection open before the
// fault: the fault acts on new connections.
func (Refuse) Plan(base time.Duration, _ *rand.Rand) Action {
	return Action{Kind: ActionServe, Service: base}
}

// planSeen is what a client opening a connection per request sees: a
// reset (see SimulatedPlan).
func (Refuse) planSeen(time.Duration, *rand.Rand) Action {
	return Action{Kind: ActionReset, WholeConn: true}
}

func (Refuse) connEffects() connEffects { return connEffects{refuse: true} }
